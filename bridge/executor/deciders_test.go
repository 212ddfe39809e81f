package executor

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// [approval] deciders and four_eyes: an approval counts only from a
// decider the UI authenticated, in a deciders group, and not the user who
// made the call; any other approval ends the call denied (DeciderRefused,
// recorded approval.refused) instead of leaving it waiting. The twins:
// another approver's approval runs the call, and anyone's denial denies it.
func TestApprovalNeedsAnotherAuthenticatedDecider(t *testing.T) {
	const cfg = `[auth]
issuer = "https://idp.example"
ui_client_id = "tracebridge-ui"

[auth.roles]
approver = ["approvers"]

[approval]
mode = "prompt"
timeout = "10s"
deciders = ["approvers"]
four_eyes = "all"
`
	alice := identity.User{Subject: "u-alice", Issuer: "https://idp.example", Name: "alice", Groups: []string{"approvers"}}
	bob := identity.User{Subject: "u-bob", Issuer: "https://idp.example", Name: "bob", Groups: []string{"approvers"}}
	carol := identity.User{Subject: "u-carol", Issuer: "https://idp.example", Name: "carol", Groups: []string{"dev"}}
	for _, tc := range []struct {
		name     string
		decider  identity.User
		decision string
		code     events.Code
	}{
		{"the requester herself", alice, events.Approve, events.CodeDeciderRefused},
		{"no one in particular (the CLI)", identity.User{}, events.Approve, events.CodeDeciderRefused},
		{"not in a deciders group", carol, events.Approve, events.CodeDeciderRefused},
		{"another approver", bob, events.Approve, ""},
		{"the requester denies", alice, events.Deny, events.CodeApprovalDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, cfg, nil, func(d *Descriptor) { d.Approval = "always" })
			req := h.em.NewID()
			go func() { // the UI, in another process in real life
				for {
					evs, _ := h.st.ByRequest(req)
					for _, e := range evs {
						if e.Kind == events.KindApprovalRequested {
							if e.Attrs.Get(events.AttrFourEyes) != "true" || e.Attrs.Get(events.AttrDeciders) != "approvers" {
								t.Errorf("the request does not say who may decide: %v", e.Attrs)
							}
							attrs := events.A(append([]string{events.AttrApprovalID, e.Attrs.Get(events.AttrApprovalID), events.AttrDecision, tc.decision,
								events.AttrArgsHash, e.Attrs.Get(events.AttrArgsHash), "by", tc.decider.Display() + " (ui)"}, tc.decider.AttrsAs(identity.DeciderPrefix)...)...)
							h.st.Append(context.Background(), []events.Event{{ID: events.NewID(), Time: time.Now(), Kind: events.KindApprovalDecided,
								Boundary: events.BoundaryApproval, RequestID: req, Outcome: events.OK, Attrs: attrs}})
							return
						}
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			res := h.x.Execute(context.Background(), Invocation{Tool: "echo", Args: json.RawMessage(`{"text":"ship it"}`), RequestID: req, User: alice})
			if res.Code != tc.code {
				t.Fatalf("result %+v, want code %q", res, tc.code)
			}
			if ran := h.runs.Load() == 1; ran != (tc.code == "") {
				t.Fatalf("tool ran = %v", ran)
			}
			h.em.Flush(context.Background(), req)
			evs, _ := h.st.ByRequest(req)
			refused := false
			for _, e := range evs {
				refused = refused || e.Kind == events.KindApprovalRefused && e.Code == events.CodeDeciderRefused
			}
			if refused != (tc.code == events.CodeDeciderRefused) {
				t.Fatalf("approval.refused recorded = %v: %s", refused, kinds(evs))
			}
			if tc.code == "" {
				if env := envelopeOf(t, evs); env["approval"].(map[string]any)["decider"].(map[string]any)["sub"] != "u-bob" {
					t.Fatalf("the envelope's approval: %v", env["approval"])
				}
			}
		})
	}
}
