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

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/browsertest"
)

// newBrowser starts a headless Chromium (browsertest.New) and returns a
// tab context.
func newBrowser(t testing.TB) context.Context {
	t.Helper()
	return browsertest.New(t, 1400, 1000)
}

// run runs browser actions with a deadline, failing the test with what
// the page showed.
func run(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(cctx, actions...); err != nil {
		var body string
		bctx, bcancel := context.WithTimeout(ctx, 5*time.Second) // a page that hangs must not hang the test
		defer bcancel()
		chromedp.Run(bctx, chromedp.Evaluate(`document.location.href + "\n" + (document.body ? document.body.innerText : "")`, &body))
		t.Fatalf("%s: %v\npage:\n%s", what, err, body)
	}
}

// click clicks the element sel names, again when the page replaced it
// between finding and clicking it (a form's answer still loading): the
// click was then never dispatched.
func click(sel string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for try := 0; ; try++ {
			err := chromedp.Click(sel, chromedp.ByQuery).Do(ctx)
			if err == nil || try == 20 || !strings.Contains(err.Error(), "Could not find node with given id") {
				return err
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}

// await evaluates a JavaScript expression whose value is a promise.
func await(expr string, out any) chromedp.Action {
	return chromedp.Evaluate(expr, out, func(p *runtime.EvaluateParams) *runtime.EvaluateParams { return p.WithAwaitPromise(true) })
}

// flashFor waits for the page the decision on proposal id redirects to,
// and reads what it says happened.
func flashFor(id string, out *string) chromedp.Action {
	return waitJS(fmt.Sprintf(`(() => { const f = document.getElementById("flash"); return f && f.textContent.startsWith(%q) ? f.textContent : "" })()`, id+":"), out)
}

// waitJS evaluates expr until it gives a non-empty string, across page
// loads (chromedp.Poll fails when the page navigates under it).
func waitJS(expr string, out *string) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			if err := chromedp.Evaluate(expr, out).Do(ctx); err == nil && *out != "" {
				return nil
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(50 * time.Millisecond):
			}
		}
	})
}

// screenshotDir is where the browser test saves pictures of the main pages
// (out/screenshots in the repository; TB_SCREENSHOTS overrides).
func screenshotDir(t *testing.T) string {
	d := os.Getenv("TB_SCREENSHOTS")
	if d == "" {
		d = filepath.Join("..", "..", "out", "screenshots")
	}
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	var png []byte
	run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(screenshotDir(t), name+".png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
}

// uiURL waits for `tracebridge ui` to print the running UI's URL.
func uiURL(t testing.TB, data string) string {
	t.Helper()
	var url string
	eventually(t, 15*time.Second, "tracebridge ui", func() bool {
		out, err := exec.Command(tbBin, "--data", data, "ui").Output()
		url = strings.TrimSpace(string(out))
		return err == nil && strings.Contains(url, "?token=")
	})
	return url
}

// TestOperatorUIInBrowser drives the operator UI of a real `tracebridge up`
// in Chromium while a real bridge serves an MCP client.
func TestOperatorUIInBrowser(t *testing.T) {
	long(t)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "svc"), 0o755)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	aGo := "package svc\n\n// Price is in cents.\nfunc Price() int { return 100 }\n\nfunc Tax() int { return 7 }\n"
	os.WriteFile(filepath.Join(ws, "svc", "a.go"), []byte(aGo), 0o644)
	os.WriteFile(filepath.Join(ws, "svc", "b.go"), []byte("package svc\n\nvar Name = \"b\"\n"), 0o644)
	start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0")
	url := uiURL(t, data)
	b := startBridge(t, tbBin, data, "")
	ctx := newBrowser(t)

	// The token is exchanged for a cookie and leaves the address bar.
	var loc string
	run(t, ctx, "open the UI", chromedp.Navigate(url), chromedp.WaitVisible("#runs-body", chromedp.ByQuery), chromedp.Location(&loc))
	if strings.Contains(loc, "token") || !strings.HasSuffix(loc, "/runs") {
		t.Fatalf("after the token exchange the page is %s", loc)
	}
	var cookieVisible bool
	run(t, ctx, "cookie", chromedp.Evaluate(`document.cookie.includes("tracebridge_session")`, &cookieVisible))
	if cookieVisible {
		t.Fatal("the session cookie is readable by script (not HttpOnly)")
	}

	// Runs appear live while the MCP session runs: no reload.
	run(t, ctx, "mark the page", chromedp.Evaluate(`window.__sameDocument = true`, nil),
		chromedp.WaitVisible("#live.on", chromedp.ByQuery))
	_, live, code := b.call(t, "get_active_document", map[string]any{})
	if code != "" {
		t.Fatalf("get_active_document: %s", code)
	}
	run(t, ctx, "the new run appears", chromedp.WaitVisible(fmt.Sprintf(`tr[data-request="%s"]`, live), chromedp.ByQuery))
	var same bool
	run(t, ctx, "still the same document", chromedp.Evaluate(`window.__sameDocument === true`, &same))
	if !same {
		t.Fatal("the runs page reloaded instead of updating live")
	}
	// Issue 46 F6: a long tool name and a verdict keep the Runs table
	// inside the window (it was wider than 1400 px).
	_, long, _ := b.call(t, "a_tool_name_as_long_as_the_ones_gateways_make__list_allowed_directories_of_the_workspace", map[string]any{})
	var overflow float64
	run(t, ctx, "the long run appears", chromedp.WaitVisible(fmt.Sprintf(`tr[data-request="%s"]`, long), chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth - window.innerWidth`, &overflow))
	if overflow > 0 {
		t.Errorf("the Runs table is %.0f px wider than the window", overflow)
	}
	screenshot(t, ctx, "runs")

	// A failed run: verdict banner and a diagram Mermaid rendered as SVG.
	_, failed, code := b.call(t, "propose_text_edit", map[string]any{"path": "svc/a.go", "original": "no such text", "replacement": "x"})
	if code == "" {
		t.Fatal("a proposal of text the file lacks succeeded")
	}
	var verdictCode, status, mermaidState string
	var svgs int
	run(t, ctx, "open the failed run",
		chromedp.Navigate(strings.TrimSuffix(loc, "/runs")+"/runs/"+failed.String()),
		chromedp.WaitVisible("#verdict", chromedp.ByQuery),
		chromedp.Poll(`document.body.dataset.mermaid`, &mermaidState, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.AttributeValue("#verdict", "data-code", &verdictCode, nil, chromedp.ByQuery),
		chromedp.AttributeValue("#verdict", "data-status", &status, nil, chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll(".diagram svg").length`, &svgs))
	if verdictCode != string(code) || status == "ok" {
		t.Errorf("verdict banner: status %s code %s, want the call's code %s", status, verdictCode, code)
	}
	if mermaidState != "done" || svgs != 1 {
		var errs []string
		chromedp.Run(ctx, chromedp.Evaluate(`tracebridge.mermaidErrors`, &errs))
		t.Errorf("diagram: state %q, %d svg, errors %v", mermaidState, svgs, errs)
	}
	// Issue 46 F6: every lane of the run's diagram is on the first screen
	// (scaled to the box's width, not running off its edge).
	var fit struct {
		Scale string  `json:"scale"`
		Over  float64 `json:"over"`
		Lanes int     `json:"lanes"`
	}
	run(t, ctx, "the diagram fits", chromedp.Evaluate(`(() => { const b = document.querySelector(".diagram"), s = b.querySelector("svg");
		return {scale: b.dataset.scale || "", over: s.getBoundingClientRect().right - b.getBoundingClientRect().right,
			lanes: new Set([...s.querySelectorAll("text.actor")].map(t => t.textContent)).size}; })()`, &fit))
	if fit.Over > 0 || fit.Scale == "scroll" || fit.Lanes < 6 {
		t.Errorf("the run's diagram (%d lanes) runs %.0f px past its box (scale %q)", fit.Lanes, fit.Over, fit.Scale)
	}
	var bannerText string
	run(t, ctx, "banner text", chromedp.Text("#verdict", &bannerText, chromedp.ByQuery))
	if !strings.Contains(bannerText, "What to do") {
		t.Errorf("the verdict banner names no action: %q", bannerText)
	}
	screenshot(t, ctx, "run-failed")
	root := strings.TrimSuffix(loc, "/runs")

	// Every committed diagram parses and renders.
	files, _ := filepath.Glob(filepath.Join("..", "..", "docs", "diagrams", "*.mmd"))
	if len(files) == 0 {
		t.Fatal("no committed diagrams found")
	}
	for _, f := range files {
		src, _ := os.ReadFile(f)
		js, _ := json.Marshal(string(src))
		var out string
		run(t, ctx, "render "+filepath.Base(f), await(`tracebridge.render(`+string(js)+`).then(s => s.slice(0, 4), e => "error: " + (e && e.message || e))`, &out))
		if out != "<svg" {
			t.Errorf("%s: Mermaid: %s", filepath.Base(f), out)
		}
	}

	// Approve one proposal and see the file change on disk; reject another.
	propose := func(orig, repl string) string {
		t.Helper()
		res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "svc/a.go", "original": orig, "replacement": repl})
		if code != "" {
			t.Fatalf("propose: %s %s", code, textOf(res))
		}
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		return p.ProposalID
	}
	approveID := propose("return 100", "return 120")
	rejectID := propose("return 7", "return 8")
	var diff string
	run(t, ctx, "approvals page", chromedp.Navigate(root+"/approvals"),
		chromedp.Text(fmt.Sprintf(`article[data-proposal="%s"] pre.diff`, approveID), &diff, chromedp.ByQuery))
	if !strings.Contains(diff, "-func Price() int { return 100 }") || !strings.Contains(diff, "+func Price() int { return 120 }") {
		t.Errorf("the pending diff:\n%s", diff)
	}
	screenshot(t, ctx, "approvals")
	var flash string
	run(t, ctx, "approve",
		click(fmt.Sprintf(`article[data-proposal="%s"] button[value="approve"]`, approveID)),
		flashFor(approveID, &flash))
	if !strings.Contains(flash, approveID+": applied") {
		t.Errorf("after approve: %q", flash)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "svc", "a.go")); !strings.Contains(string(got), "return 120") || !strings.Contains(string(got), "return 7") {
		t.Fatalf("svc/a.go after approving in the UI:\n%s", got)
	}
	run(t, ctx, "reject",
		click(fmt.Sprintf(`article[data-proposal="%s"] button[value="reject"]`, rejectID)),
		flashFor(rejectID, &flash))
	if !strings.Contains(flash, rejectID+": rejected") {
		t.Errorf("after reject: %q", flash)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "svc", "a.go")); strings.Contains(string(got), "return 8") {
		t.Fatal("a rejected proposal was written")
	}

	// A review reference opens the workspace file at its line.
	review := "# Price change\n\nThe price is now 120 cents: [svc/a.go:4][].\n\n<script>window.__pwned = 1</script>\n\n" +
		"[click](javascript:window.__pwned=2) and see also [svc/b.go:3][].\n"
	if res, _, code := b.call(t, "present_review", map[string]any{"mode": "replace", "content": review}); code != "" {
		t.Fatalf("present_review: %s %s", code, textOf(res))
	}
	var pwned bool
	var commit string
	run(t, ctx, "reviews page", chromedp.Navigate(root+"/reviews"), chromedp.WaitVisible("#review", chromedp.ByQuery),
		chromedp.Evaluate(`window.__pwned !== undefined || document.querySelector('#review script, #review a[href^="javascript"]') !== null`, &pwned),
		chromedp.Value("#commit-message", &commit, chromedp.ByQuery))
	if pwned {
		t.Error("the review's HTML or javascript: link reached the page")
	}
	if !strings.HasPrefix(commit, "Price change\n\nThe price is now 120 cents: svc/a.go:4.") {
		t.Errorf("commit message:\n%s", commit)
	}
	screenshot(t, ctx, "review")
	var target string
	run(t, ctx, "follow the reference",
		chromedp.Click(`//article[@id="review"]//a[text()="svc/a.go:4"]`, chromedp.BySearch),
		chromedp.WaitVisible("tr#L4.target", chromedp.ByQuery), chromedp.Location(&loc),
		chromedp.Text("tr#L4 td.src", &target, chromedp.ByQuery))
	if !strings.Contains(loc, "/workspace?file=svc%2Fa.go#L4") || target != "func Price() int { return 120 }" {
		t.Errorf("the reference landed on %s at %q", loc, target)
	}
	screenshot(t, ctx, "workspace")

	// Select "Price() int" on line 4 with the mouse: get_selection returns it.
	var box struct{ X1, Y1, X2, Y2 float64 }
	run(t, ctx, "measure", chromedp.Evaluate(`(() => {
		const cell = document.querySelector("tr#L4 td.src"), text = cell.firstChild, s = text.data.indexOf("Price()");
		const r = document.createRange(); r.setStart(text, s); r.setEnd(text, s + 1); const a = r.getBoundingClientRect();
		r.setStart(text, s + "Price() int".length - 1); r.setEnd(text, s + "Price() int".length); const b = r.getBoundingClientRect();
		return {X1: a.left + 1, Y1: (a.top + a.bottom) / 2, X2: b.right - 0.5, Y2: (b.top + b.bottom) / 2};
	})()`, &box))
	var focusState string
	run(t, ctx, "drag-select",
		chromedp.ActionFunc(func(ctx context.Context) error {
			steps := []*input.DispatchMouseEventParams{
				input.DispatchMouseEvent(input.MousePressed, box.X1, box.Y1).WithButton(input.Left).WithClickCount(1),
				input.DispatchMouseEvent(input.MouseMoved, (box.X1+box.X2)/2, box.Y1).WithButton(input.Left),
				input.DispatchMouseEvent(input.MouseMoved, box.X2, box.Y2).WithButton(input.Left),
				input.DispatchMouseEvent(input.MouseReleased, box.X2, box.Y2).WithButton(input.Left).WithClickCount(1),
			}
			for _, s := range steps {
				if err := s.Do(ctx); err != nil {
					return err
				}
			}
			return nil
		}),
		chromedp.Poll(`document.getElementById("focus-status").dataset.state`, &focusState, chromedp.WithPollingTimeout(10*time.Second)))
	if focusState != "sent" {
		t.Fatalf("the selection was not sent: %s", focusState)
	}
	res, _, code := b.call(t, "get_selection", map[string]any{})
	if code != "" || !strings.Contains(textOf(res), `"text":"Price() int"`) || !strings.Contains(textOf(res), `"path":"svc/a.go"`) {
		t.Errorf("get_selection after selecting in the UI: %s %s", code, textOf(res))
	}
	res, _, _ = b.call(t, "get_active_document", map[string]any{})
	if !strings.Contains(textOf(res), `"path":"svc/a.go"`) {
		t.Errorf("get_active_document after selecting in the UI: %s", textOf(res))
	}

	// The whole session's diagram.
	var href string
	var ok bool
	run(t, ctx, "sessions", chromedp.Navigate(root+"/sessions"), chromedp.WaitVisible("table.sessions", chromedp.ByQuery),
		chromedp.AttributeValue("table.sessions a", "href", &href, &ok, chromedp.ByQuery))
	if !ok {
		t.Fatal("no session listed")
	}
	// In a window narrower than the diagram, its text keeps its size and
	// the diagram scrolls, rather than shrinking to fit.
	var text struct{ Height, Scroll, Width float64 }
	run(t, ctx, "session diagram", chromedp.EmulateViewport(700, 1000), chromedp.Navigate(root+href),
		chromedp.Poll(`document.body.dataset.mermaid`, &mermaidState, chromedp.WithPollingTimeout(20*time.Second)),
		chromedp.Evaluate(`document.querySelectorAll(".diagram svg").length`, &svgs),
		chromedp.Evaluate(`(() => { const d = document.querySelector(".diagram"), m = d.querySelector("text.messageText");
			return {Height: m ? m.getBoundingClientRect().height : 0, Scroll: d.scrollWidth, Width: d.clientWidth} })()`, &text))
	if mermaidState != "done" || svgs != 1 {
		t.Errorf("session diagram: %q, %d svg", mermaidState, svgs)
	}
	if text.Height < 12 || text.Scroll <= text.Width {
		t.Errorf("in a 700 px window the diagram's message text is %.1f px high (want 12 or more), the diagram %.0f px wide in %.0f px", text.Height, text.Scroll, text.Width)
	}
	screenshot(t, ctx, "session")
}

// TestToolApprovalInBrowser: a tool call waiting for approval is approved
// on the approvals page, bound to the arguments it shows, and then runs.
func TestToolApprovalInBrowser(t *testing.T) {
	long(t)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0")
	url := uiURL(t, data)
	b := startBridge(t, tbTestBin, data, "2025-06-18", writeConfig(t, "[approval]\nmode = \"prompt\"\ntimeout = \"60s\"\n[policy]\ngrant = [\"workspace.write\"]\n"))
	marker := filepath.Join(base, "ran")
	type result struct {
		code events.Code
		text string
	}
	done := make(chan result, 1)
	go func() {
		res, _, code := b.call(t, "test_write", map[string]any{"marker": marker})
		done <- result{code, textOf(res)}
	}()
	ctx := newBrowser(t)
	root := strings.SplitN(url, "/?", 2)[0]
	var args string
	run(t, ctx, "open the UI", chromedp.Navigate(url), chromedp.WaitVisible("#runs-body", chromedp.ByQuery))
	run(t, ctx, "the call waits on the approvals page", chromedp.ActionFunc(func(ctx context.Context) error {
		for {
			if err := chromedp.Run(ctx, chromedp.Navigate(root+"/approvals")); err != nil {
				return err
			}
			var n int
			if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("article.approval").length`, &n)); err != nil {
				return err
			}
			if n == 1 {
				return chromedp.Run(ctx, chromedp.Text("article.approval pre.args", &args, chromedp.ByQuery))
			}
			time.Sleep(100 * time.Millisecond)
		}
	}))
	if !strings.Contains(args, marker) {
		t.Errorf("the approval shows arguments %q", args)
	}
	// Who asks and what the tool says of itself are beside the arguments.
	var who, sessionHref string
	run(t, ctx, "who asks", chromedp.Text("article.approval p.who", &who, chromedp.ByQuery),
		chromedp.AttributeValue("article.approval p.who a.session", "href", &sessionHref, nil, chromedp.ByQuery))
	if !strings.Contains(who, "client e2e/1.0") || !strings.Contains(who, "destructive") || !strings.HasPrefix(sessionHref, "/sessions/") {
		t.Errorf("the approval shows %q (session %q): want the client, the tool's hints and the session", who, sessionHref)
	}
	screenshot(t, ctx, "approval-pending")
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("the tool ran before it was approved")
	}
	var flash string
	run(t, ctx, "approve", chromedp.SendKeys(`article.approval input[name="reason"]`, "checked the path", chromedp.ByQuery),
		chromedp.Click(`article.approval button[value="approve"]`, chromedp.ByQuery),
		waitJS(`(() => { const f = document.getElementById("flash"); return f ? f.textContent : "" })()`, &flash))
	if !strings.HasPrefix(flash, "approved test_write") {
		t.Errorf("after approving: %q", flash)
	}
	select {
	case r := <-done:
		if r.code != "" {
			t.Fatalf("the approved call: %s %s", r.code, r.text)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the approved call did not finish")
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatal("the approved tool did not run")
	}
	// The runs list names the client and the wait; the sessions list the
	// transport and the failures, and exports the session as a file
	// `session replay` takes.
	var client, wait string
	run(t, ctx, "runs list", chromedp.Navigate(root+"/runs?kind=all"), chromedp.WaitVisible("#runs-body", chromedp.ByQuery),
		chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("#runs-body tr.run")].find(r => r.textContent.includes("test_write")); return r ? r.querySelector("td.client").textContent : "" })()`, &client),
		chromedp.Evaluate(`(() => { const r = [...document.querySelectorAll("#runs-body tr.run")].find(r => r.textContent.includes("test_write")); return r ? r.querySelector("td.wait").textContent : "" })()`, &wait))
	if client != "e2e/1.0" || wait == "" {
		t.Errorf("the test_write run lists client %q, wait %q", client, wait)
	}
	var transport, exported string
	run(t, ctx, "sessions list", chromedp.Navigate(root+"/sessions"), chromedp.WaitVisible("table.sessions", chromedp.ByQuery),
		chromedp.Text(`table.sessions td.transport`, &transport, chromedp.ByQuery),
		await(`fetch(document.querySelector("table.sessions a.export").href).then(r => r.text())`, &exported))
	if transport != "stdio" {
		t.Errorf("the session's transport: %q", transport)
	}
	sessionFile := filepath.Join(base, "exported.jsonl")
	os.WriteFile(sessionFile, []byte(exported), 0o600)
	if out, err := exec.Command(tbTestBin, "--data", filepath.Join(base, "redrive"), "session", "replay", sessionFile).CombinedOutput(); err != nil {
		t.Errorf("the session exported from the UI does not re-drive: %v\n%s\n%.400s", err, out, exported)
	}
	screenshot(t, ctx, "sessions")

	var decided []events.Event
	for _, e := range requestEventsOf(t, data, "test_write") {
		if e.Kind == events.KindApprovalDecided {
			decided = append(decided, e)
		}
	}
	if len(decided) != 1 || decided[0].Attrs.Get("decision") != "approve" || !strings.HasSuffix(decided[0].Attrs.Get("by"), "(ui)") ||
		decided[0].Attrs.Get("reason") != "checked the path" {
		t.Errorf("recorded decisions: %+v", decided)
	}
}

// requestEventsOf returns the events of the one run of tool in data's log.
func requestEventsOf(t *testing.T, data, tool string) []events.Event {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", data, "runs", "--tool", tool, "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var s struct{ RequestID events.ID }
	if err := json.Unmarshal([]byte(strings.SplitN(string(out), "\n", 2)[0]), &s); err != nil {
		t.Fatalf("runs --json: %v %s", err, out)
	}
	out, err = exec.Command(tbBin, "--data", data, "replay", s.RequestID.String(), "--format", "json").Output()
	if err != nil {
		t.Fatalf("replay --format json: %v", err)
	}
	var r struct{ Events []events.Event }
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("replay --format json: %v %s", err, out)
	}
	return r.Events
}
