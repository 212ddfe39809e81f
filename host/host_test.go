package host

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

func newHost(t *testing.T) (*Host, *propRig) {
	t.Helper()
	r := newPropRig(t)
	rev, err := OpenReviews(r.tr.ws, filepath.Join(t.TempDir(), "reviews"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Host{WS: r.tr.ws, Proposals: r.props, Reviews: rev}, r
}

func call(t *testing.T, h *Host, cmd string, payload any) (json.RawMessage, error) {
	t.Helper()
	b, _ := json.Marshal(payload)
	v, err := h.Handlers()[cmd](context.Background(), pipe.Request{Command: cmd, Payload: b, RequestID: events.NewID().String()})
	out, _ := json.Marshal(v)
	return out, err
}

func TestFocusSelectionAndDocument(t *testing.T) {
	h, _ := newHost(t)
	if out, _ := call(t, h, "get_selection", nil); string(out) != "null" {
		t.Fatalf("selection with no focus: %s", out)
	}
	if _, err := call(t, h, "set_focus", Focus{Path: "../outside/sentinel.txt"}); err == nil {
		t.Fatal("focus outside the root accepted")
	}
	call(t, h, "set_focus", Focus{Path: "a.go", StartLine: 3, StartCol: 6, EndLine: 3, EndCol: 7})
	out, err := call(t, h, "get_selection", nil)
	if err != nil || !strings.Contains(string(out), `"text":"A"`) {
		t.Fatalf("selection: %s %v", out, err)
	}
	out, _ = call(t, h, "get_active_document", nil)
	if !strings.Contains(string(out), `"language":"go"`) || !strings.Contains(string(out), `"path":"a.go"`) {
		t.Fatalf("document: %s", out)
	}
}

func TestProposeDecideOverHandlers(t *testing.T) {
	h, r := newHost(t)
	out, err := call(t, h, "propose_text_edits", ProposeArgs{Files: []FileChange{{Path: "a.go", Edits: []Edit{{Original: "return 1", Replacement: "return 7"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	var p struct{ ProposalID, ContentHash string }
	json.Unmarshal(out, &p)
	if _, err := call(t, h, "proposals.decide", DecideArgs{ID: p.ProposalID, Approve: true, ContentHash: p.ContentHash, By: "op"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(r.tr.root, "a.go")); !strings.Contains(string(b), "return 7") {
		t.Fatal("approval did not apply")
	}
	_, err = call(t, h, "proposals.decide", DecideArgs{ID: p.ProposalID, Approve: false, ContentHash: p.ContentHash})
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodeNotPending {
		t.Fatalf("second decision: %v", err)
	}
	_, err = call(t, h, "present_review", PresentArgs{Content: "x", Mode: ModeUpdateSection})
	if !errors.As(err, &ce) || ce.Code != events.CodeInvalidArguments || !strings.Contains(ce.Msg, "Section parameter required") {
		t.Fatalf("review error: %v", err)
	}
}

func TestDiagnosticsRunParseAndRefreshRule(t *testing.T) {
	h, _ := newHost(t)
	if _, err := call(t, h, "get_diagnostics", nil); err == nil || !strings.Contains(err.Error(), "--diagnostics") {
		t.Fatalf("unconfigured: %v", err)
	}
	h.Diagnostics = &DiagnosticsRunner{Command: []string{"sh", "-c", `date +%N >> runs; echo "./a.go:3:6: warning: A is unused"; exit 1`}, Refresh: time.Hour}
	out, err := call(t, h, "get_diagnostics", nil)
	if err != nil || !strings.Contains(string(out), `"file":"a.go","line":3,"column":6,"severity":"warning"`) || !strings.Contains(string(out), `"exitCode":1`) {
		t.Fatalf("first run: %s %v", out, err)
	}
	out, _ = call(t, h, "get_diagnostics", nil)
	if !strings.Contains(string(out), `"fromCache":true`) {
		t.Fatalf("second call within the refresh window ran again: %s", out)
	}
	out, _ = call(t, h, "get_diagnostics", map[string]bool{"refresh": true})
	if strings.Contains(string(out), `"fromCache":true`) {
		t.Fatalf("refresh:true reused the cache: %s", out)
	}
	b, _ := os.ReadFile(filepath.Join(h.WS.Dir(), "runs"))
	if n := strings.Count(string(b), "\n"); n != 2 {
		t.Fatalf("the command ran %d times, want 2", n)
	}
}

// Editors send absolute paths: one inside the root (also through a symlink
// to the root) is accepted as the relative path; one outside, or through
// a sibling with the root's name as a prefix, is refused.
func TestFocusAcceptsAbsolutePathsInsideTheRoot(t *testing.T) {
	h, r := newHost(t)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(r.tr.root, link)
	for _, p := range []string{filepath.Join(r.tr.root, "a.go"), filepath.Join(link, "a.go"), r.tr.root + "/./a.go"} {
		if _, err := call(t, h, "set_focus", Focus{Path: p, StartLine: 3, StartCol: 6, EndLine: 3, EndCol: 7}); err != nil {
			t.Fatalf("focus %s: %v", p, err)
		}
		if out, _ := call(t, h, "get_active_document", nil); !strings.Contains(string(out), `"path":"a.go"`) {
			t.Fatalf("focus %s: document %s", p, out)
		}
	}
	sibling := r.tr.root + "-sibling"
	os.MkdirAll(sibling, 0o755)
	os.WriteFile(filepath.Join(sibling, "a.go"), []byte("x\n"), 0o644)
	for _, p := range []string{filepath.Join(sibling, "a.go"), "/etc/passwd", filepath.Join(r.tr.root, "..", filepath.Base(sibling), "a.go")} {
		_, err := call(t, h, "set_focus", Focus{Path: p})
		var ce *events.Err
		if !errors.As(err, &ce) || ce.Code != events.CodePathRefused {
			t.Errorf("focus %s: %v, want PathRefused", p, err)
		}
	}
}

// Focus on a file that does not exist, or a selection past the file's end,
// is refused with what is wrong — not an internal error text.
func TestFocusRefusesWhatIsNotThere(t *testing.T) {
	h, _ := newHost(t)
	_, err := call(t, h, "set_focus", Focus{Path: "nope.go", StartLine: 1})
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodePathRefused || !strings.Contains(ce.Msg, "does not exist") || strings.Contains(ce.Msg, "statat") {
		t.Fatalf("focus on a missing file: %v", err)
	}
	_, err = call(t, h, "set_focus", Focus{Path: "a.go", StartLine: 99, StartCol: 1, EndLine: 99, EndCol: 5})
	if !errors.As(err, &ce) || ce.Code != events.CodeInvalidArguments || !strings.Contains(ce.Msg, "outside the file") {
		t.Fatalf("focus past the end: %v", err)
	}
}
