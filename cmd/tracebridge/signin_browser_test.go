package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/oidctest"
)

// signIn takes the browser through the provider's login page as username
// to page (a UI path), and returns who the UI says is signed in.
func signIn(t *testing.T, ctx context.Context, origin, page, username, password string) string {
	t.Helper()
	var who string
	run(t, ctx, "sign in as "+username, chromedp.Navigate(origin+page),
		chromedp.WaitVisible(`input[name="username"]`, chromedp.ByQuery), // the provider's own page
		chromedp.SendKeys(`input[name="username"]`, username, chromedp.ByQuery),
		chromedp.SendKeys(`input[name="password"]`, password, chromedp.ByQuery),
		chromedp.Click(`button[type="submit"]`, chromedp.ByQuery),
		waitJS(`(() => { const w = document.querySelector("header .signed-in"); return w ? w.textContent : "" })()`, &who))
	return who
}

// signOut signs the browser out of the UI.
func signOut(t *testing.T, ctx context.Context, origin string) {
	t.Helper()
	var body string
	run(t, ctx, "sign out", chromedp.Navigate(origin+"/approvals"), click(`header form.who button`), waitJS(`document.body.innerText.includes("signed out") ? "yes" : ""`, &body))
}

// UI sign-in with OpenID Connect (issue 48 items 3 and 4), in Chromium
// through the provider's login page, with four eyes: Bob calls a tool
// that needs approval through the HTTP front door with his access token;
// Carol, a viewer, sees who asked but cannot approve (RoleRefused); Bob,
// an approver, cannot approve his own call (DeciderRefused, and the call
// still waits); Alice approves it and it runs. The decision names Alice as
// the authenticated decider, the request Bob; the sign-ins are recorded.
func TestUISignInAndFourEyesInBrowser(t *testing.T) {
	long(t)
	uiPort, mcpPort := freePort(t), freePort(t)
	origin := fmt.Sprintf("http://tb-team.localhost:%d", uiPort)
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", mcpPort)
	users := []oidctest.User{
		{ID: "u-alice", Username: "alice", Password: "alice-pw", Email: "alice@example.com", Groups: []string{"approvers"}},
		{ID: "u-bob", Username: "bob", Password: "bob-pw", Email: "bob@example.com", Groups: []string{"approvers"}},
		{ID: "u-carol", Username: "carol", Password: "carol-pw", Email: "carol@example.com", Groups: []string{"dev"}},
	}
	op := oidctest.Start(t, users, oidctest.Client{ID: "team-mcp", Audience: []string{resource}},
		oidctest.Client{ID: "tb-ui", RedirectURIs: []string{origin + "/auth/callback"}})
	cfg := writeConfig(t, fmt.Sprintf(`[auth]
issuer = %q
scopes = ["mcp"]
ui_client_id = "tb-ui"
ui_origin = %q

[auth.roles]
viewer = ["dev"]
approver = ["approvers"]

[approval]
mode = "prompt"
timeout = "120s"
deciders = ["approvers"]
four_eyes = "all"

[tools.regex_text_search]
approval = "always"
`, op.Issuer, origin))
	path, _ := strings.CutPrefix(cfg, "TRACEBRIDGE_CONFIG=")
	t.Setenv("TRACEBRIDGE_CONFIG", path)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	up := start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0")
	url, _, stderr, _ := startHTTPBridgeAt(t, data, mcpPort, nil, cfg)
	eventually(t, 15*time.Second, "the UI answers at its origin", func() bool { return strings.Contains(up.stderrText(), origin) })

	bob := &mcpChild{session: oauthClient(t, op, url, "team-mcp", "bob", "bob-pw"), stderr: stderr, data: data}
	type result struct {
		code events.Code
		req  events.ID
	}
	done := make(chan result, 1)
	go func() { // longer than bob.call waits: three people sign in meanwhile
		cctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := bob.session.CallTool(cctx, &sdk.CallToolParams{Name: "regex_text_search", Arguments: map[string]any{"query": "x", "text": "x"}})
		if err != nil {
			done <- result{code: events.Code("protocol error: " + err.Error())}
			return
		}
		idText, _ := res.Meta[bmcp.MetaRequestID].(string)
		req, _ := events.ParseID(idText)
		done <- result{codeOf(res), req}
	}()

	ctx := newBrowser(t)
	// Carol: a viewer sees the call and who asked, and cannot approve it.
	if who := signIn(t, ctx, origin, "/approvals", "carol", "carol-pw"); !strings.Contains(who, "carol") || !strings.Contains(who, "viewer") {
		t.Fatalf("signed in as %q", who)
	}
	var asker string
	run(t, ctx, "the call waits, asked by bob", chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			if err := chromedp.Run(ctx, chromedp.Navigate(origin+"/approvals")); err != nil {
				return err
			}
			var n int
			if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("article.approval").length`, &n)); err != nil {
				return err
			}
			if n == 1 {
				return chromedp.Run(ctx, chromedp.Text("article.approval p.asker", &asker, chromedp.ByQuery))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}))
	if !strings.Contains(asker, "bob") || !strings.Contains(asker, "bob@example.com") {
		t.Errorf("the approval says it was asked by %q", asker)
	}
	screenshot(t, ctx, "approval-four-eyes")
	approve := func(who string) string {
		var answer string
		run(t, ctx, who+" approves", chromedp.Navigate(origin+"/approvals"), chromedp.WaitVisible("article.approval", chromedp.ByQuery),
			chromedp.Click(`article.approval button[value="approve"]`, chromedp.ByQuery),
			waitJS(`(() => { const f = document.getElementById("flash"); if (f) return f.textContent; const t = document.body.innerText; return t.includes("Refused") ? t : "" })()`, &answer))
		return answer
	}
	// A viewer is offered no decision, and one posted anyway (the form a
	// page for approvers would have) is refused.
	var offered int
	var refused string
	run(t, ctx, "carol approves anyway", chromedp.Navigate(origin+"/approvals"), chromedp.WaitVisible("article.approval", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll('article.approval button[value="approve"]').length`, &offered),
		await(`(() => { const a = document.querySelector("article.approval"); const f = new FormData();
			f.set("csrf", document.querySelector('meta[name="csrf-token"]').content); f.set("decision", "approve");
			f.set("argsHash", a.querySelector("p.hash code").textContent);
			return fetch("/do/approval/" + a.dataset.approval, {method: "POST", body: new URLSearchParams(f)}).then(r => r.status + " " + r.statusText).then(s => s) })()`, &refused))
	if offered != 0 || !strings.HasPrefix(refused, "403") {
		t.Fatalf("a viewer: %d approve buttons; approving anyway: %q", offered, refused)
	}
	eventually(t, 5*time.Second, "carol's refusal recorded", func() bool { return countCode(t, data, events.KindUIRejected, events.CodeRoleRefused) > 0 })
	// The command line names no one: it cannot give this approval.
	var approvalID string
	run(t, ctx, "the approval's id", chromedp.Navigate(origin+"/approvals"), chromedp.AttributeValue("article.approval", "data-approval", &approvalID, nil, chromedp.ByQuery))
	if out, err := exec.Command(tbBin, "--data", data, "approvals", "approve", approvalID).CombinedOutput(); err == nil || !strings.Contains(string(out), "DeciderRefused") {
		t.Fatalf("approvals approve from the command line: %v\n%s", err, out)
	}
	signOut(t, ctx, origin)

	// Bob: an approver, but it is his own call.
	signIn(t, ctx, origin, "/approvals", "bob", "bob-pw")
	if got := approve("bob"); !strings.Contains(got, "DeciderRefused") || !strings.Contains(got, "four eyes") {
		t.Fatalf("the requester approving his own call: %q", got)
	}
	select {
	case r := <-done:
		t.Fatalf("the call ended (%s) before another approver decided", r.code)
	default:
	}
	signOut(t, ctx, origin)

	// Alice approves: the call runs.
	signIn(t, ctx, origin, "/approvals", "alice", "alice-pw")
	if got := approve("alice"); !strings.HasPrefix(got, "approved regex_text_search") {
		t.Fatalf("alice approving: %q", got)
	}
	var r result
	select {
	case r = <-done:
		if r.code != "" {
			t.Fatalf("the approved call: %s", r.code)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call did not finish")
	}
	var decided, requested events.Event
	for _, e := range requestEventsLive(t, bob, r.req) {
		switch e.Kind {
		case events.KindApprovalDecided:
			decided = e
		case events.KindApprovalRequested:
			requested = e
		}
	}
	if d := identity.FromAttrsAs(identity.DeciderPrefix, decided.Attrs.Get); d.Subject != "u-alice" || decided.Attrs.Get(events.AttrBy) != "alice (ui)" {
		t.Errorf("the decision names %+v, by %q", d, decided.Attrs.Get(events.AttrBy))
	}
	if u := identity.FromAttrs(requested.Attrs.Get); u.Subject != "u-bob" || requested.Attrs.Get(events.AttrFourEyes) != "true" {
		t.Errorf("the approval request names %+v (%v)", u, requested.Attrs)
	}
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	signins := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		var e events.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == events.KindUISignedIn {
			signins[e.Attrs.Get(identity.AttrSub)+"/"+e.Attrs.Get("role")] = true
		}
	}
	for _, want := range []string{"u-carol/viewer", "u-bob/approver", "u-alice/approver"} {
		if !signins[want] {
			t.Errorf("sign-in %s not recorded: %v", want, signins)
		}
	}
}
