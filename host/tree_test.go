package host

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

func TestTreeListsRegularFilesAndSkipsHidden(t *testing.T) {
	tr := newTree(t)
	os.MkdirAll(filepath.Join(tr.root, ".git", "objects"), 0o755)
	os.WriteFile(filepath.Join(tr.root, ".git", "HEAD"), []byte("ref"), 0o644)
	os.WriteFile(filepath.Join(tr.root, ".env"), []byte("SECRET=1"), 0o644)
	os.WriteFile(filepath.Join(tr.root, "main.go"), []byte("package main\n"), 0o644)
	os.Symlink(tr.sentinel, filepath.Join(tr.root, "escape.txt"))
	got, err := tr.ws.Tree()
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"main.go", "sub/ok.txt"}; !reflect.DeepEqual(got.Files, want) || got.Truncated {
		t.Errorf("tree: %v (truncated %v), want %v", got.Files, got.Truncated, want)
	}
}

func TestViewReadsTextAndRefusesEscapes(t *testing.T) {
	tr := newTree(t)
	os.WriteFile(filepath.Join(tr.root, "bin.dat"), []byte{0xff, 0xfe, 0}, 0o644)
	v, err := tr.ws.View("./sub/../sub/ok.txt")
	if err != nil || v.Path != "sub/ok.txt" || v.Content != "old" || v.Binary {
		t.Errorf("view: %+v %v", v, err)
	}
	if v, err := tr.ws.View("bin.dat"); err != nil || !v.Binary || v.Content != "" || v.Bytes != 3 {
		t.Errorf("binary view: %+v %v", v, err)
	}
	for _, p := range []string{"../outside/sentinel.txt", tr.sentinel, "sub"} {
		if _, err := tr.ws.View(p); err == nil {
			t.Errorf("view %q was allowed", p)
		}
	}
}

// TestPendingPreviewIsTheDiffApprovalWouldApply: the preview of a pending
// proposal is the diff Apply writes, and says Drift once the file changed.
func TestPendingPreviewIsTheDiffApprovalWouldApply(t *testing.T) {
	r := newPropRig(t)
	pr, err := r.props.Create(events.NewID().String(), "", twoFiles())
	if err != nil {
		t.Fatal(err)
	}
	shown := r.props.WithPreviews(r.props.List())[0]
	if shown.Code != "" || !strings.Contains(shown.Preview, "+var X = \"z\"") {
		t.Fatalf("pending preview: %s %q", shown.Code, shown.Preview)
	}
	if r.read("a.go") != "package a\n\nfunc A() int { return 1 }\n" {
		t.Fatal("a preview wrote the file")
	}
	if _, err := r.props.Decide(pr.ID, true, pr.ContentHash, "op"); err != nil {
		t.Fatal(err)
	}
	// Previews are only computed for pending proposals.
	if p := r.props.WithPreviews(r.props.List())[0]; p.Preview != "" {
		t.Errorf("approved proposal got a computed preview")
	}
	done, err := r.props.Apply(t.Context(), pr.ID)
	if err != nil || done.Preview != shown.Preview {
		t.Errorf("applied preview differs from the pending one:\n%s\n---\n%s", done.Preview, shown.Preview)
	}

	next, err := r.props.Create(events.NewID().String(), "", []FileChange{{Path: "a.go", BaseHash: hashBytes([]byte(r.read("a.go"))),
		Edits: []Edit{{Original: "return 2", Replacement: "return 3"}}}})
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(r.tr.root, "a.go"), []byte("changed\n"), 0o644)
	for _, p := range r.props.WithPreviews(r.props.List()) {
		if p.ID == next.ID && p.Code != events.CodeDrift {
			t.Errorf("preview of drifted content: %s %q", p.Code, p.Message)
		}
	}
}
