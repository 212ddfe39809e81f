package host

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// editorRig is a host served on a real socket, an editor connection that
// speaks docs/pipe-protocol.md's "Editors" frame by frame, and the
// operator's client.
type editorRig struct {
	h      *Host
	r      *propRig
	conn   net.Conn
	frames chan map[string]any // host → editor: notifications and requests
	op     *pipe.Client
	// answer is the editor's answer to editor.apply_edit (nil: apply it).
	answer func(req map[string]any) map[string]any
	next   int
}

func newEditorRig(t *testing.T) *editorRig {
	t.Helper()
	h, r := newHost(t)
	h.Rec = r.em
	dir, err := os.MkdirTemp("", "tbed")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "host.sock")
	l, err := pipe.Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: r.em, Logger: quiet})
	done := make(chan struct{})
	go func() { srv.Serve(ctx, l); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	e := &editorRig{h: h, r: r, conn: conn, frames: make(chan map[string]any, 64),
		op: pipe.NewClient(pipe.ClientOptions{Path: sock, Recorder: r.em, Logger: quiet})}
	t.Cleanup(func() { e.op.Close() })
	go e.read()
	return e
}

// read sorts the host's frames: answers to the editor's requests, requests
// the editor answers (editor.apply_edit), notifications.
func (e *editorRig) read() {
	sc := bufio.NewScanner(e.conn)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var f map[string]any
		json.Unmarshal(sc.Bytes(), &f)
		if f["command"] == pipe.CmdEditorApplyEdit {
			ans := map[string]any{"ok": true, "payload": map[string]any{"version": f["payload"].(map[string]any)["version"].(float64) + 1}}
			if e.answer != nil {
				ans = e.answer(f)
			}
			ans["v"], ans["operationId"], ans["requestId"] = 1, f["operationId"], f["requestId"]
			b, _ := json.Marshal(ans)
			e.conn.Write(append(b, '\n'))
		}
		e.frames <- f
	}
	close(e.frames)
}

// send sends an editor request and returns the host's answer.
func (e *editorRig) send(t *testing.T, command string, payload any) map[string]any {
	t.Helper()
	e.next++
	op := events.NewID().String()
	b, _ := json.Marshal(map[string]any{"v": 1, "command": command, "operationId": op, "payload": payload})
	if _, err := e.conn.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	for f := range e.waitFor(t, func(f map[string]any) bool { return f["operationId"] == op && f["command"] == nil }) {
		return f
	}
	return nil
}

// waitFor returns (as a one-element sequence) the first frame that matches,
// skipping others, within 5 s.
func (e *editorRig) waitFor(t *testing.T, match func(map[string]any) bool) func(func(map[string]any) bool) {
	t.Helper()
	timeout := time.After(5 * time.Second)
	for {
		select {
		case f, ok := <-e.frames:
			if !ok {
				t.Fatal("the host closed the editor's connection")
			}
			if match(f) {
				return func(yield func(map[string]any) bool) { yield(f) }
			}
		case <-timeout:
			t.Fatal("no such frame from the host within 5s")
		}
	}
}

// call is the bridge's or the operator's request.
func (e *editorRig) call(t *testing.T, command string, payload any) pipe.Response {
	t.Helper()
	b, _ := json.Marshal(payload)
	resp, err := e.op.Call(context.Background(), pipe.Request{Command: command, RequestID: events.NewID().String(), OperationID: events.NewID().String(), Payload: b})
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func (e *editorRig) abs(rel string) string { return filepath.Join(e.r.tr.root, rel) }

func TestEditorFeedsFocusSelectionAndDiagnostics(t *testing.T) {
	e := newEditorRig(t)
	if a := e.send(t, pipe.CmdEditorFocus, map[string]any{"path": e.abs("a.go")}); a["ok"] != false || a["code"] != string(events.CodeInvalidArguments) {
		t.Fatalf("focus before attach: %v", a)
	}
	a := e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test", "version": "1"})
	if a["ok"] != true || a["payload"].(map[string]any)["root"] != e.h.WS.Dir() {
		t.Fatalf("attach: %v", a)
	}
	unsaved := "package a\n\nfunc A() int { return 2 } // typed, not saved\n"
	a = e.send(t, pipe.CmdEditorFocus, map[string]any{"path": e.abs("a.go"), "language": "go", "version": 4, "dirty": true, "text": unsaved,
		"selection": map[string]any{"startLine": 3, "startCol": 16, "endLine": 3, "endCol": 24, "text": "return 2"}})
	if a["ok"] != true {
		t.Fatalf("focus: %v", a)
	}
	doc := e.call(t, pipe.CmdActiveDocument, nil)
	var d struct {
		Path, Content string
		Version       int
		Unsaved       bool
	}
	json.Unmarshal(doc.Payload, &d)
	if d.Path != "a.go" || d.Content != unsaved || d.Version != 4 || !d.Unsaved {
		t.Fatalf("active document: %s", doc.Payload)
	}
	if sel := e.call(t, pipe.CmdSelection, nil); !strings.Contains(string(sel.Payload), `"text":"return 2"`) {
		t.Fatalf("selection: %s", sel.Payload)
	}
	// The operator's focus wins until the editor speaks again.
	e.call(t, pipe.CmdSetFocus, Focus{Path: "b.go"})
	if doc := e.call(t, pipe.CmdActiveDocument, nil); !strings.Contains(string(doc.Payload), `"path":"b.go"`) {
		t.Fatalf("after set_focus: %s", doc.Payload)
	}

	if diag := e.call(t, pipe.CmdDiagnostics, nil); diag.OK {
		t.Fatalf("diagnostics with no editor report and no command: %s", diag.Payload)
	}
	a = e.send(t, pipe.CmdEditorDiagnostics, map[string]any{"diagnostics": []map[string]any{
		{"file": e.abs("a.go"), "line": 3, "column": 16, "endLine": 3, "endColumn": 24, "severity": "error", "source": "compiler", "code": "MismatchedTypes", "message": "bad"},
		{"file": "/elsewhere/x.go", "line": 1, "severity": "error", "message": "outside the root: left out"},
	}})
	if a["payload"].(map[string]any)["kept"] != 1.0 {
		t.Fatalf("diagnostics: %v", a)
	}
	diag := e.call(t, pipe.CmdDiagnostics, nil)
	if !strings.Contains(string(diag.Payload), `{"file":"a.go","line":3,"column":16,"endLine":3,"endColumn":24,"severity":"error","source":"compiler","code":"MismatchedTypes","message":"bad"}`) ||
		!strings.Contains(string(diag.Payload), `"editor":"test"`) {
		t.Fatalf("get_diagnostics: %s", diag.Payload)
	}

	// The editor leaves: what it said goes with it.
	e.send(t, pipe.CmdEditorFocus, map[string]any{"path": e.abs("a.go"), "version": 5, "dirty": true, "text": unsaved})
	e.conn.Close()
	eventually(t, func() bool { _, ok := e.h.Editors().Buffer("a.go"); return !ok })
	if doc := e.call(t, pipe.CmdActiveDocument, nil); string(doc.Payload) != "null" {
		t.Fatalf("document after the editor left: %s", doc.Payload)
	}
	if evs := e.recorded(t, events.KindEditorAttached, events.KindEditorDetached); len(evs) != 2 || evs[0].Attrs.Get("editor") != "test" {
		t.Fatalf("attach and detach events: %v", evs)
	}
}

// recorded returns the log's events of kinds, in order, once every event
// emitted so far is durable.
func (e *editorRig) recorded(t *testing.T, kinds ...string) []events.Event {
	t.Helper()
	if err := e.r.em.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	all, err := e.r.st.Range(1, 100000)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	for _, ev := range all {
		if slices.Contains(kinds, ev.Kind) {
			out = append(out, ev)
		}
	}
	return out
}

func eventually(t *testing.T, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("condition not met within 5s")
}

// decide approves a proposal as the operator does and returns the host's
// answer.
func (e *editorRig) propose(t *testing.T, path, original, replacement string) (id, hash string) {
	t.Helper()
	resp := e.call(t, pipe.CmdProposeEdits, ProposeArgs{Files: []FileChange{{Path: path, Edits: []Edit{{Original: original, Replacement: replacement}}}}})
	if !resp.OK {
		t.Fatalf("propose: %s %s", resp.Code, resp.Message)
	}
	var p struct{ ProposalID, ContentHash string }
	json.Unmarshal(resp.Payload, &p)
	return p.ProposalID, p.ContentHash
}

func (e *editorRig) approve(t *testing.T, id, hash string) *Proposal {
	t.Helper()
	resp := e.call(t, pipe.CmdProposalsDecide, DecideArgs{ID: id, Approve: true, ContentHash: hash, By: "test"})
	var pr Proposal
	json.Unmarshal(resp.Payload, &pr)
	return &pr
}

func TestAnApprovedEditReachesTheUnsavedBufferNotTheDisk(t *testing.T) {
	e := newEditorRig(t)
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	disk, _ := os.ReadFile(e.abs("a.go"))
	unsaved := "package a\n\nfunc A() int { return 2 }\n"
	e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("a.go"), "version": 7, "dirty": true, "text": unsaved})

	// Proposed against what the user sees: the buffer's "return 2" is not on disk.
	id, hash := e.propose(t, "a.go", "return 2", "return 3")
	for f := range e.waitFor(t, func(f map[string]any) bool { return f["notify"] == pipe.NotifyProposalChanged }) {
		if p := f["payload"].(map[string]any); p["id"] != id || p["state"] != Pending {
			t.Fatalf("notification: %v", f)
		}
	}
	pr := e.approve(t, id, hash)
	if pr.State != Applied {
		t.Fatalf("approve: %+v", pr)
	}
	for f := range e.waitFor(t, func(f map[string]any) bool { return f["command"] == pipe.CmdEditorApplyEdit }) {
		p := f["payload"].(map[string]any)
		if p["path"] != e.abs("a.go") || p["version"] != 7.0 || p["text"] != "package a\n\nfunc A() int { return 3 }\n" || p["proposal"] != id {
			t.Fatalf("apply_edit: %v", f)
		}
	}
	if now, _ := os.ReadFile(e.abs("a.go")); string(now) != string(disk) {
		t.Fatalf("the disk was written: %q", now)
	}
	if b, _ := e.h.Editors().Buffer("a.go"); b.Text != "package a\n\nfunc A() int { return 3 }\n" || b.Version != 8 {
		t.Fatalf("buffer after apply: %+v", b)
	}
	evs := e.recorded(t, events.KindEditorRequestSent, events.KindEditorResponseReceived, events.KindProposalApplied)
	if len(evs) != 3 || evs[1].Outcome != events.OK || evs[1].RequestID != evs[0].RequestID || evs[0].RequestID.IsZero() {
		t.Fatalf("the editor crossing: %v", evs)
	}
	if applied := evs[len(evs)-1]; applied.Attrs.Get("via") != "editor" || applied.Attrs.Get("editorFiles") != "a.go" {
		t.Fatalf("proposal.applied: %v", applied.Attrs)
	}
}

func TestUnsavedWorkIsNeverWrittenOver(t *testing.T) {
	e := newEditorRig(t)
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	disk, _ := os.ReadFile(e.abs("a.go"))

	// Made against the disk; then the user types without saving.
	id, hash := e.propose(t, "a.go", "return 1", "return 9")
	e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("a.go"), "version": 2, "dirty": true, "text": "package a\n\nfunc A() int { return 1 } // mine\n"})
	if pr := e.approve(t, id, hash); pr.State != Failed || pr.Code != events.CodeDrift || !strings.Contains(pr.Message, "unsaved changes") {
		t.Fatalf("approve over unsaved work: %+v", pr)
	}
	if now, _ := os.ReadFile(e.abs("a.go")); string(now) != string(disk) {
		t.Fatalf("the disk was written: %q", now)
	}

	// Made against the buffer; the editor's text moves on before it applies.
	id, hash = e.propose(t, "a.go", "// mine", "// ours")
	e.answer = func(map[string]any) map[string]any {
		return map[string]any{"ok": false, "code": "Drift", "message": "a.go is at version 3, not 2"}
	}
	if pr := e.approve(t, id, hash); pr.State != Failed || pr.Code != events.CodeDrift || !strings.Contains(pr.Message, "version 3") {
		t.Fatalf("approve when the editor refuses: %+v", pr)
	}
	// Saved: the buffer is the file again, and the disk takes the edit.
	os.WriteFile(e.abs("a.go"), []byte("package a\n\nfunc A() int { return 1 } // mine\n"), 0o644)
	e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("a.go"), "version": 3})
	id, hash = e.propose(t, "a.go", "// mine", "// saved")
	if pr := e.approve(t, id, hash); pr.State != Applied {
		t.Fatalf("approve after save: %+v", pr)
	}
	if now, _ := os.ReadFile(e.abs("a.go")); !strings.Contains(string(now), "// saved") {
		t.Fatalf("disk after save and approve: %q", now)
	}
	evs := e.recorded(t, events.KindProposalApplied)
	if evs[len(evs)-1].Attrs.Get("via") != "disk" {
		t.Fatalf("via: %v", evs[len(evs)-1].Attrs)
	}
}

func TestAReviewPresentedIsAnnouncedAndShownOneVersionAtATime(t *testing.T) {
	e := newEditorRig(t)
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	if resp := e.call(t, pipe.CmdPresentReview, PresentArgs{Content: "# Done\n\nSee [a.go:3][].\n", Mode: ModeReplace}); !resp.OK {
		t.Fatalf("present: %s", resp.Message)
	}
	for f := range e.waitFor(t, func(f map[string]any) bool { return f["notify"] == pipe.NotifyReviewPresented }) {
		if f["payload"].(map[string]any)["version"] != 1.0 {
			t.Fatalf("notification: %v", f)
		}
	}
	a := e.send(t, pipe.CmdReviewsShow, map[string]any{"version": 0})
	if p := a["payload"].(map[string]any); p["version"] != 1.0 || !strings.Contains(p["content"].(string), "[a.go:3][]") {
		t.Fatalf("reviews.show: %v", a)
	}
	if a := e.send(t, pipe.CmdReviewsShow, map[string]any{"version": 2}); a["ok"] != false {
		t.Fatalf("a version that does not exist: %v", a)
	}
}

// What an editor sends is decoded strictly and kept only inside the root:
// no payload panics the host, puts a buffer or a diagnostic outside the
// workspace, or keeps a dirty document without its text.
func FuzzEditorPayloads(f *testing.F) {
	f.Add([]byte(`{"path":"a.go","version":3,"dirty":true,"text":"x","selection":{"startLine":1,"startCol":1,"endLine":1,"endCol":2,"text":"x"}}`))
	f.Add([]byte(`{"path":"../outside/sentinel.txt","dirty":true,"text":"x"}`))
	f.Add([]byte(`{"diagnostics":[{"file":"/etc/passwd","line":1,"severity":"error","message":"m"},{"file":"a.go","line":0,"message":"m"}]}`))
	f.Add([]byte(`{"path":"a.go","closed":true}`))
	tr := newTree(f)
	e := newEditors(tr.ws, nil)
	c := &editorConn{name: "fuzz"}
	f.Fuzz(func(t *testing.T, data []byte) {
		req := pipe.Request{Payload: data}
		var doc EditorDocument
		if decode(req, &doc) == nil {
			if e.setFocus(c, doc) == nil && doc.Path != "" {
				if f, buf, ok := e.Focus(); !ok || !isInside(f.Path) || (buf != nil && !isInside(buf.Path)) {
					t.Fatalf("focus %+v outside the root", f)
				}
			}
			e.document(c, doc)
		}
		var diags EditorDiagnostics
		if decode(req, &diags) == nil {
			e.setDiagnostics(c, diags.Diagnostics)
			got, _, _ := e.Diagnostics()
			for _, d := range got {
				if !isInside(d.File) || d.Line < 1 {
					t.Fatalf("diagnostic kept: %+v", d)
				}
			}
		}
		for p, b := range e.buffers {
			if !isInside(p) || b.Path != p {
				t.Fatalf("buffer kept at %q", p)
			}
		}
	})
}

// isInside reports whether rel is a clean workspace-relative path.
func isInside(rel string) bool {
	c, err := Clean(rel)
	return err == nil && c == rel
}
