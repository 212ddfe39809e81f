package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// The real bridge against the real host over the real socket: read tools,
// proposals approved, rejected, drifted and ambiguous, reviews in every
// mode, and the host stopped mid-session.
func TestBridgeAndHostEndToEnd(t *testing.T) {
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "svc"), 0o755)
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module x\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "svc", "a.go"), []byte("package svc\n\nfunc A() int { return 1 }\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "svc", "b.go"), []byte("package svc\n\nvar X, Y = \"x\", \"x\"\n"), 0o644)

	os.WriteFile(filepath.Join(ws, "lint.sh"), []byte("echo './svc/a.go:3:6: warning: A is unused'\nexit 1\n"), 0o644)
	h := start(t, tbBin, data, "up", "--root", ws, "--diagnostics", "sh lint.sh") // hub + host; the bridge attaches
	eventually(t, 10*time.Second, "the host socket", func() bool {
		_, err := os.Stat(filepath.Join(data, "run", "host.sock"))
		return err == nil
	})
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
		return string(out), err
	}
	b := startBridge(t, tbBin, data, "2025-06-18")
	// The diagnostics command is the operator's (host --diagnostics): the
	// tool needs workspace.read only, as when an editor answers it.
	if res, _, code := b.call(t, "get_diagnostics", map[string]any{}); code != "" || !strings.Contains(textOf(res), `{"file":"svc/a.go","line":3,"column":6,"severity":"warning","message":"A is unused"}`) {
		t.Fatalf("get_diagnostics: %s %s", code, textOf(res))
	}

	res, _, code := b.call(t, "get_selection", map[string]any{})
	if code != "" || textOf(res) != "null" {
		t.Fatalf("selection before focus: %s %s", code, textOf(res))
	}
	if out, err := cli("focus", "svc/a.go:3:6-3:7"); err != nil {
		t.Fatalf("focus: %v %s", err, out)
	}
	res, _, _ = b.call(t, "get_selection", map[string]any{})
	if !strings.Contains(textOf(res), `"text":"A"`) {
		t.Fatalf("selection: %s", textOf(res))
	}
	res, _, _ = b.call(t, "get_active_document", map[string]any{})
	if !strings.Contains(textOf(res), `"path":"svc/a.go"`) || !strings.Contains(textOf(res), `"language":"go"`) {
		t.Fatalf("document: %s", textOf(res))
	}
	res, _, _ = b.call(t, "list_projects", map[string]any{})
	if !strings.Contains(textOf(res), `"manifest":"go.mod"`) {
		t.Fatalf("projects: %s", textOf(res))
	}

	propose := func(path, original, replacement string) string {
		t.Helper()
		res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": path, "original": original, "replacement": replacement})
		if code != "" {
			t.Fatalf("propose: %s %s", code, textOf(res))
		}
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		return p.ProposalID
	}
	approved := propose("svc/a.go", "return 1", "return 2")
	if b, _ := os.ReadFile(filepath.Join(ws, "svc", "a.go")); strings.Contains(string(b), "return 2") {
		t.Fatal("a proposal was written before approval")
	}
	if out, err := cli("proposals", "approve", approved); err != nil || !strings.Contains(out, "applied") {
		t.Fatalf("approve: %v %s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "svc", "a.go")); !strings.Contains(string(b), "return 2") {
		t.Fatal("the approved edit was not applied")
	}
	// The operator's command is a run of its own, named by its command.
	eventually(t, 10*time.Second, "runs --kind other names the operator's command", func() bool {
		out, _ := cli("runs", "--kind", "other")
		return strings.Contains(out, "pipe proposals.decide")
	})
	rejected := propose("svc/a.go", "return 2", "return 3")
	if out, err := cli("proposals", "reject", rejected); err != nil || !strings.Contains(out, "rejected") {
		t.Fatalf("reject: %v %s", err, out)
	}
	drifted := propose("svc/a.go", "return 2", "return 4")
	os.WriteFile(filepath.Join(ws, "svc", "a.go"), []byte("package svc\n\nfunc A() int { return 2 } // edited\n"), 0o644)
	if out, err := cli("proposals", "approve", drifted); err == nil || !strings.Contains(out, "Drift") {
		t.Fatalf("approve after drift: %v %s", err, out)
	}
	if _, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "svc/b.go", "original": `"x"`, "replacement": `"y"`}); code != events.CodeAmbiguous {
		t.Fatalf("ambiguous proposal: %s", code)
	}
	if _, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "../outside.go", "original": "a", "replacement": "b"}); code != events.CodePathRefused {
		t.Fatalf("proposal outside the root: %s", code)
	}

	for _, mode := range []map[string]any{
		{"content": "# Review\n\n## Summary\nsee [svc/a.go:3][]\n", "mode": "replace"},
		{"content": "## Risks\nnone", "mode": "append"},
		{"content": "updated", "mode": "update-section", "section": "Summary"},
	} {
		if res, _, code := b.call(t, "present_review", mode); code != "" {
			t.Fatalf("review %v: %s %s", mode["mode"], code, textOf(res))
		}
	}
	if _, _, code := b.call(t, "present_review", map[string]any{"content": "x", "mode": "update-section"}); code != events.CodeInvalidArguments {
		t.Fatalf("update-section without a section: %s", code)
	}
	if res, _, code := b.call(t, "present_review", map[string]any{"content": "x", "mode": "sideways"}); code != events.CodeInvalidArguments ||
		!strings.Contains(textOf(res), "Mode must be 'replace', 'update-section', or 'append'") {
		t.Fatalf("a bad mode: %s %s", code, textOf(res))
	}
	// The operator reads them: summaries, then one version whole.
	if out, err := cli("reviews", "list"); err != nil || !regexpLine(out, `^3 +\S+ \S+ +update-section +Summary +\d+ +0 +0$`) || !strings.Contains(out, "VERSION") {
		t.Fatalf("reviews list: %v\n%s", err, out)
	}
	if out, err := cli("reviews", "show", "1"); err != nil || out != "# Review\n\n## Summary\nsee [svc/a.go:3][]\n" {
		t.Fatalf("reviews show 1: %v %q", err, out)
	}
	if out, err := cli("reviews", "show", "9"); err == nil || !strings.Contains(out, "no review version 9") {
		t.Fatalf("reviews show 9: %v %q", err, out)
	}

	// The host goes away: the next workspace call says what to start, at once.
	h.cmd.Process.Signal(syscall.SIGTERM)
	h.wait(t, 10*time.Second)
	t0 := time.Now()
	res, req, code := b.call(t, "get_selection", map[string]any{})
	if code != events.CodePipeUnavailable || !strings.Contains(textOf(res), "tracebridge up --root") || time.Since(t0) > 3*time.Second {
		t.Fatalf("after the host stopped: %s %q in %v", code, textOf(res), time.Since(t0))
	}
	b.close(t)
	if evs := requestEvents(t, data, req); !hasKind(evs, events.KindPipeUnavailable, events.CodePipeUnavailable) {
		t.Fatalf("no pipe.unavailable event: %v", kindsOf(evs))
	}
	// The operator replays the failed call: the verdict names the pipe.
	out, err := exec.Command(tbBin, "--data", data, "replay", req.String(), "--format", "json").Output()
	var run struct {
		Status  string
		Verdict struct{ Boundary, Code, Action string }
	}
	if err != nil || json.Unmarshal(out, &run) != nil || run.Status != "failed" || run.Verdict.Boundary != "pipe" ||
		run.Verdict.Code != "PipeUnavailable" || !strings.Contains(run.Verdict.Action, "tracebridge up --root") {
		t.Fatalf("replay: %v %s", err, out)
	}
	if out, _ := exec.Command(tbBin, "--data", data, "replay", req.String(), "--format", "mermaid").Output(); !strings.Contains(string(out), "Pipe-xExecutor: pipe.unavailable unavailable PipeUnavailable") {
		t.Fatalf("replay diagram:\n%s", out)
	}
	verifyStore(t, data)
}

// The host is killed (SIGKILL) after the first of two files of an approved
// set — once between the files, once with the second file's temporary
// copy synced but not renamed; on restart it finishes the set from its
// journal, the state it reports is honest (applied, both files new), and
// no temporary file is left in the workspace.
func TestHostKilledMidApplyIsReconciled(t *testing.T) {
	for _, failpoint := range []string{"TB_FAILPOINT_KILL_AFTER_FILES=1", "TB_FAILPOINT_KILL_BEFORE_RENAME=2", "TB_FAILPOINT_KILL_BEFORE_JOURNAL=1"} {
		t.Run(strings.SplitN(failpoint, "=", 2)[0], func(t *testing.T) { hostKilledMidApply(t, failpoint) })
	}
}

func hostKilledMidApply(t *testing.T, failpoint string) {
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "b.txt"), []byte("beta\n"), 0o644)
	waitSocket := func() {
		eventually(t, 10*time.Second, "the host socket", func() bool {
			c, err := exec.Command(tbBin, "--data", data, "proposals", "list").CombinedOutput()
			return err == nil && (strings.Contains(string(c), "ID") || strings.Contains(string(c), "no proposals"))
		})
	}
	cmd := exec.Command(tbTestBin, "--data", data, "up", "--root", ws)
	cmd.Env = append(os.Environ(), failpoint)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitSocket()
	b := startBridge(t, tbBin, data, "2025-06-18")
	res, proposeReq, code := b.call(t, "propose_text_edits", map[string]any{"files": []any{
		map[string]any{"path": "a.txt", "edits": []any{map[string]string{"original": "alpha", "replacement": "ALPHA"}}},
		map[string]any{"path": "b.txt", "edits": []any{map[string]string{"original": "beta", "replacement": "BETA"}}},
	}})
	if code != "" {
		t.Fatalf("propose: %s %s", code, textOf(res))
	}
	var p struct{ ProposalID string }
	json.Unmarshal([]byte(textOf(res)), &p)
	out, err := exec.Command(tbBin, "--data", data, "proposals", "approve", p.ProposalID).CombinedOutput()
	if err == nil {
		t.Fatalf("the approval should have lost its host mid-apply: %s", out)
	}
	cmd.Wait() // killed by the failpoint
	read := func(f string) string { b, _ := os.ReadFile(filepath.Join(ws, f)); return string(b) }
	if strings.Contains(failpoint, "BEFORE_JOURNAL") {
		// Killed with the intent on record and nothing written: the restart
		// closes the step, failed with ApplyInterrupted; the files are as
		// they were; the run is not left open (MissingStep).
		restart := start(t, tbBin, data, "up", "--root", ws)
		defer restart.cmd.Process.Signal(syscall.SIGTERM)
		waitSocket()
		if read("a.txt") != "alpha\n" || read("b.txt") != "beta\n" {
			t.Fatalf("files written by an apply that never journaled: a=%q b=%q", read("a.txt"), read("b.txt"))
		}
		out, err := exec.Command(tbBin, "--data", data, "proposals", "show", p.ProposalID, "--json").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"state": "failed"`) || !strings.Contains(string(out), `"code": "ApplyInterrupted"`) {
			t.Fatalf("state after restart: %v %s", err, out)
		}
		eventually(t, 10*time.Second, "the run closed with ApplyInterrupted", func() bool {
			out, _ := exec.Command(tbBin, "--data", data, "replay", proposeReq.String(), "--format", "json").CombinedOutput()
			return strings.Contains(string(out), `"code": "ApplyInterrupted"`) && !strings.Contains(string(out), "MissingStep")
		})
		b.close(t)
		return
	}
	if read("a.txt") != "ALPHA\n" || read("b.txt") != "beta\n" {
		t.Fatalf("the crash did not land between the files: a=%q b=%q", read("a.txt"), read("b.txt"))
	}
	temps := func() []string { m, _ := filepath.Glob(filepath.Join(ws, ".tb-*.tmp")); return m }
	if strings.Contains(failpoint, "BEFORE_RENAME") && len(temps()) != 1 {
		t.Fatalf("the crash did not land before the rename: temporary files %v", temps())
	}
	restart := start(t, tbBin, data, "up", "--root", ws)
	defer restart.cmd.Process.Signal(syscall.SIGTERM)
	waitSocket()
	if read("b.txt") != "BETA\n" {
		t.Fatalf("restart did not finish the set: b=%q", read("b.txt"))
	}
	out, err = exec.Command(tbBin, "--data", data, "proposals", "show", p.ProposalID, "--json").CombinedOutput()
	if err != nil || !strings.Contains(string(out), `"state": "applied"`) {
		t.Fatalf("state after restart: %v %s", err, out)
	}
	if left := temps(); len(left) > 0 {
		t.Errorf("recovery left temporary files in the workspace: %v", left)
	}
	b.close(t)
}
