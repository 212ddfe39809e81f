package executor

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

const rulesConfig = `
[approval]
mode = "deny"

[policy.rules.no-secrets-dir]
tools = ["echo"]
when = 'args.text.contains("/secrets/")'
effect = "deny"
message = "nothing under /secrets/"

[policy.rules.docs-need-a-look]
tools = ["ec*"]
when = 'args.text.startsWith("docs/")'
effect = "approve"
message = "docs changes are reviewed"

[policy.rules.ping-is-free]
when = 'tool == "echo" && args.text == "ping" && client.startsWith("test/")'
effect = "allow"

[policy.rules.size]
tools = ["echo"]
when = 'args.missing > 3'
effect = "deny"
`

// Rules decide calls by their arguments: deny, require approval, or allow
// without it; the decision records the rule and the policy version; a
// rule that cannot be evaluated (a field the arguments lack) denies with
// its own code.
func TestRulesDecideByArguments(t *testing.T) {
	withoutSize, _, _ := strings.Cut(rulesConfig, "[policy.rules.size]")
	h := newHarness(t, withoutSize, nil, func(d *Descriptor) { d.Approval = "always" })
	for _, tc := range []struct {
		args, code, rule, effect string
	}{
		{`{"text":"ping"}`, "", "ping-is-free", "allow"},                            // approval waived
		{`{"text":"/srv/secrets/key"}`, "PolicyDenied", "no-secrets-dir", "deny"},   // denied
		{`{"text":"docs/readme"}`, "ApprovalDenied", "docs-need-a-look", "approve"}, // gated ([approval] mode deny)
		{`{"text":"docs/secrets/"}`, "PolicyDenied", "no-secrets-dir", "deny"},      // deny wins over approve
		{`{"text":"hello"}`, "ApprovalDenied", "", ""},                              // no rule: the tool's own approval
	} {
		res, evs := h.call(t, "echo", tc.args)
		if string(res.Code) != tc.code {
			t.Errorf("%s: code %q (%s), want %q", tc.args, res.Code, res.Message, tc.code)
		}
		var decided *events.Event
		for i := range evs {
			if evs[i].Kind == events.KindPolicyDecided {
				decided = &evs[i]
			}
		}
		if decided == nil || decided.Attrs.Get(events.AttrRule) != tc.rule || decided.Attrs.Get(events.AttrEffect) != tc.effect ||
			len(decided.Attrs.Get(events.AttrPolicyVersion)) != 16 {
			t.Errorf("%s: policy.decided %v", tc.args, decided)
		}
		env := envelopeOf(t, evs)
		if p := env["policy"].(map[string]any); (tc.rule != "" && p["rule"] != tc.rule) || p["version"] == nil {
			t.Errorf("%s: the envelope's policy %v", tc.args, p)
		}
	}

	// A rule on a field the arguments lack cannot be evaluated: it denies.
	h = newHarness(t, rulesConfig, nil, nil)
	res, _ := h.call(t, "echo", `{"text":"x"}`)
	if res.Code != events.CodePolicyRuleFailed || !strings.Contains(res.Message, "rule size") || h.runs.Load() != 0 {
		t.Fatalf("a rule that fails: %+v, runs %d", res, h.runs.Load())
	}
}

// Hostile arguments cannot make a rule slow: a rule whose cost would pass
// the limit, or that runs past policy.Timeout, fails (and denies)
// rather than running on.
func TestRuleCostIsBounded(t *testing.T) {
	h := newHarness(t, `
[policy.rules.heavy]
when = 'args.text.split("").map(c, args.text.split("").filter(d, d == c).size()).size() > 0'
effect = "deny"
`, nil, nil)
	res, _ := h.call(t, "echo", `{"text":"`+strings.Repeat("a", 1<<16)+`"}`)
	if res.Code != events.CodePolicyRuleFailed || !strings.Contains(res.Message, "rule heavy could not be evaluated") || h.runs.Load() != 0 {
		t.Fatalf("an expensive rule: %+v", res)
	}
}

// An approval is bound to the policy it was asked under: when the policy
// changes while the operator decides, the call is decided again under the
// new one — here the new policy denies it, so it never runs on the old
// approval.
func TestApprovalIsDecidedAgainWhenThePolicyChanges(t *testing.T) {
	h := newHarness(t, "[approval]\nmode = \"prompt\"\ntimeout = \"10s\"\n", nil, func(d *Descriptor) { d.Approval = "always" })
	req := h.em.NewID()
	go func() { // the operator approves, and the configuration is reloaded meanwhile
		for {
			evs, _ := h.st.ByRequest(req)
			for _, e := range evs {
				if e.Kind == events.KindApprovalRequested {
					c, err := config.Parse("tracebridge.toml", []byte("[approval]\nmode = \"prompt\"\n[policy.rules.stop]\nwhen = \"true\"\neffect = \"deny\"\nmessage = \"frozen\"\n"))
					if err != nil {
						panic(err)
					}
					h.x.Reload(c, nil)
					h.st.Append(context.Background(), []events.Event{{ID: events.NewID(), Time: time.Now(), Kind: events.KindApprovalDecided,
						Boundary: events.BoundaryApproval, RequestID: req, Outcome: events.OK,
						Attrs: events.A(events.AttrApprovalID, e.Attrs.Get(events.AttrApprovalID), events.AttrDecision, events.Approve, events.AttrArgsHash, e.Attrs.Get(events.AttrArgsHash), "by", "operator")}})
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res := h.x.Execute(context.Background(), Invocation{Tool: "echo", Args: json.RawMessage(`{"text":"ship it"}`), RequestID: req})
	if res.Code != events.CodePolicyDenied || !strings.Contains(res.Message, "frozen") || h.runs.Load() != 0 {
		t.Fatalf("after the policy changed during the wait: %+v, runs %d", res, h.runs.Load())
	}
	h.em.Flush(context.Background(), req)
	evs, _ := h.st.ByRequest(req)
	var versions []string
	for _, e := range evs {
		if e.Kind == events.KindPolicyDecided {
			versions = append(versions, e.Attrs.Get(events.AttrPolicyVersion))
		}
	}
	if len(versions) != 2 || versions[0] == versions[1] {
		t.Fatalf("policy decisions under versions %v: want one per version", versions)
	}
}
