package host

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
)

func newReviews(t *testing.T) (*Reviews, *tree, string) {
	t.Helper()
	tr := newTree(t)
	os.WriteFile(filepath.Join(tr.root, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644)
	dir := filepath.Join(t.TempDir(), "state")
	r, err := OpenReviews(tr.ws, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r, tr, dir
}

func TestReviewModesAndVersions(t *testing.T) {
	r, tr, dir := newReviews(t)
	v1, err := r.Present("# Review\n\n## Summary\nfirst\n\n## Risks\nnone\n", "file:///ws", ModeReplace, "")
	if err != nil || v1.Version != 1 {
		t.Fatal(v1, err)
	}
	v2, _ := r.Present("## Next\nship [a.go:3][] and [a.go:99][] and [gone.go:1][] and [../outside/sentinel.txt:1][]", "", ModeAppend, "")
	if !strings.HasPrefix(v2.Content, v1.Content[:len(v1.Content)-1]) || !strings.Contains(v2.Content, "## Next") {
		t.Fatalf("append:\n%s", v2.Content)
	}
	ok := map[string]bool{}
	for _, ref := range v2.Refs {
		ok[ref.Text] = ref.OK
	}
	if !ok["[a.go:3][]"] || ok["[a.go:99][]"] || ok["[gone.go:1][]"] || ok["[../outside/sentinel.txt:1][]"] || len(v2.Refs) != 4 {
		t.Fatalf("refs %+v", v2.Refs)
	}
	v3, err := r.Present("changed\n", "", ModeUpdateSection, "summary")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v3.Content, "## Summary\nchanged\n\n## Risks\nnone") || strings.Contains(v3.Content, "first") {
		t.Fatalf("update-section:\n%s", v3.Content)
	}
	// A missing section is added at the end, and the result says so and
	// names the headings the review had (as Dialectic's MVP does).
	v4, err := r.Present("x", "", ModeUpdateSection, "Nope")
	if err != nil || !strings.Contains(v4.Note, "Summary, Risks") || !strings.HasSuffix(v4.Content, "## Nope\n\nx\n") {
		t.Fatalf("missing section: %v %+v", err, v4)
	}
	r2, _ := OpenReviews(tr.ws, dir, nil)
	if vs := r2.Versions(); len(vs) != 4 || vs[2].Content != v3.Content {
		t.Fatalf("versions after reopen: %d", len(vs))
	}
}

func TestReviewValidationMessages(t *testing.T) {
	r, _, _ := newReviews(t)
	for _, tc := range []struct{ content, mode, section, want string }{
		{"x", ModeUpdateSection, "", "Section parameter required for update-section mode"},
		{"", ModeReplace, "", "Content parameter is required"},
		{"x", "prepend", "", `Mode must be 'replace', 'update-section', or 'append'`},
		{"x", ModeAppend, "S", "section is only used with mode update-section"},
		{strings.Repeat("x", MaxReviewBytes+1), ModeReplace, "", "the limit is"},
	} {
		_, err := r.Present(tc.content, "", tc.mode, tc.section)
		var re *events.Err
		if !errors.As(err, &re) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Present(%q, %q): %v, want %q", tc.mode, tc.section, err, tc.want)
		}
	}
	if len(r.Versions()) != 0 {
		t.Fatal("a refused presentation made a version")
	}
}

func FuzzParseRefs(f *testing.F) {
	f.Add("see [src/a.go:12][] and [b.go:3:7][]")
	f.Add("[x:][] [:1][] [a:1]")
	f.Fuzz(func(t *testing.T, md string) {
		for _, ref := range ParseRefs(md) {
			if !strings.Contains(md, ref.Text) || ref.Path == "" || ref.Line < 0 || ref.Column < 0 || !utf8.ValidString(ref.Path) && utf8.ValidString(md) {
				t.Fatalf("ref %+v from %q", ref, md)
			}
		}
	})
}

// Dialectic writes references as code, and as ranges: both are references.
func TestRefsInDialecticsForms(t *testing.T) {
	refs := ParseRefs("See [`src/auth.ts:23`][], [src/a.go:3-7][], [`b.go:2:5`][] and [src/a.go:9][]; not [`x.go:1][] nor [a.go:x][].")
	want := []Ref{
		{Text: "[`src/auth.ts:23`][]", Path: "src/auth.ts", Line: 23},
		{Text: "[src/a.go:3-7][]", Path: "src/a.go", Line: 3, EndLine: 7},
		{Text: "[`b.go:2:5`][]", Path: "b.go", Line: 2, Column: 5},
		{Text: "[src/a.go:9][]", Path: "src/a.go", Line: 9},
	}
	if len(refs) != len(want) {
		t.Fatalf("refs %+v", refs)
	}
	for i := range want {
		if refs[i] != want[i] {
			t.Errorf("ref %d: %+v, want %+v", i, refs[i], want[i])
		}
	}
}

// update-section on a heading the review lacks adds it at the end and says
// so; a baseUri makes references relative to it.
func TestReviewMissingSectionAndBaseURI(t *testing.T) {
	r, tr, _ := newReviews(t)
	os.MkdirAll(filepath.Join(tr.root, "sub"), 0o755)
	os.WriteFile(filepath.Join(tr.root, "sub", "b.go"), []byte("package sub\n"), 0o644)
	for _, base := range []string{"file://" + filepath.Join(tr.root, "sub"), filepath.Join(tr.root, "sub") + "/", "sub"} {
		v, err := r.Present("see [b.go:1][]", base, ModeReplace, "")
		if err != nil || len(v.Refs) != 1 || !v.Refs[0].OK || v.Refs[0].Path != "sub/b.go" {
			t.Fatalf("baseUri %s: %v %+v", base, err, v.Refs)
		}
	}
	if _, err := r.Present("# Review\n\n## Pricing\n\nold", "", ModeReplace, ""); err != nil {
		t.Fatal(err)
	}
	v, err := r.Present("new risks", "", ModeUpdateSection, "Risks")
	if err != nil || !strings.HasSuffix(v.Content, "## Risks\n\nnew risks\n") || !strings.Contains(v.Note, "appended as a new one") {
		t.Fatalf("missing section: %v %q %q", err, v.Content, v.Note)
	}
	if !strings.Contains(v.Content, "## Pricing\n\nold") {
		t.Fatalf("the existing section was lost: %q", v.Content)
	}
}
