package host

import (
	"errors"
	"fmt"
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
	v1, err := r.Present("# Review\n\n## Summary\nfirst\n\n## Risks\nnone\n", "file://"+tr.root, ModeReplace, "", nil)
	if err != nil || v1.Version != 1 {
		t.Fatal(v1, err)
	}
	v2, _ := r.Present("## Next\nship [a.go:3][] and [a.go:99][] and [gone.go:1][] and [../outside/sentinel.txt:1][]", "", ModeAppend, "", nil)
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
	v3, err := r.Present("changed\n", "", ModeUpdateSection, "summary", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(v3.Content, "## Summary\nchanged\n\n## Risks\nnone") || strings.Contains(v3.Content, "first") {
		t.Fatalf("update-section:\n%s", v3.Content)
	}
	// A missing section is added at the end, and the result says so and
	// names the headings the review had (as Dialectic's MVP does).
	v4, err := r.Present("x", "", ModeUpdateSection, "Nope", nil)
	if err != nil || !strings.Contains(v4.Note, "Summary, Risks") || !strings.HasSuffix(v4.Content, "## Nope\n\nx\n") {
		t.Fatalf("missing section: %v %+v", err, v4)
	}
	r2, _ := OpenReviews(tr.ws, dir, nil)
	if vs := r2.Versions(); len(vs) != 4 || vs[2].Bytes != len(v3.Content) {
		t.Fatalf("versions after reopen: %+v", vs)
	}
	if again, err := r2.Version(3); err != nil || again.Content != v3.Content {
		t.Fatalf("version 3 after reopen: %v", err)
	}
}

// Dialectic's example of a long review (1000 sections), presented again and
// again: the history is listed in summaries, each version is fetched alone,
// and an append past the cap is refused before it is kept.
func TestALongReviewHistoryStaysReadable(t *testing.T) {
	h, _ := newHost(t)
	var doc strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&doc, "## Section %d\n\nThe change in [a.go:3][] does what section %d says, at some length to make it real.\n\n", i, i)
	}
	for range 7 {
		if _, err := call(t, h, "present_review", PresentArgs{Content: doc.String(), Mode: ModeReplace}); err != nil {
			t.Fatal(err)
		}
	}
	list, err := call(t, h, "reviews.list", nil)
	if err != nil || len(list) > 4096 || !strings.Contains(string(list), `"version":7`) {
		t.Fatalf("reviews.list: %d bytes, %v", len(list), err)
	}
	one, err := call(t, h, "reviews.show", map[string]int{"version": 3})
	if err != nil || !strings.Contains(string(one), "Section 999") {
		t.Fatalf("reviews.show: %v", err)
	}
	// Appends pass the cap in time: the one that would is refused, and
	// nothing of it is kept.
	var refused error
	for i := 0; i < 20 && refused == nil; i++ {
		_, refused = call(t, h, "present_review", PresentArgs{Content: doc.String(), Mode: ModeAppend})
	}
	if refused == nil || events.AsErr(refused, "").Code != events.CodeTooLarge {
		t.Fatalf("an append past the cap: %v", refused)
	}
	for _, v := range h.Reviews.Versions() {
		if v.Bytes > MaxReviewBytes {
			t.Fatalf("version %d of %d bytes was kept", v.Version, v.Bytes)
		}
	}
	out, _ := call(t, h, "present_review", PresentArgs{Content: "# Short\n\nSee [a.go:3][] and [gone.go:1][].\n", Mode: ModeReplace})
	if !strings.Contains(string(out), `"success":true`) || !strings.Contains(string(out), "1 broken") || strings.Contains(string(out), "content") {
		t.Fatalf("present_review's answer: %s", out)
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
		_, err := r.Present(tc.content, "", tc.mode, tc.section, nil)
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
	f.Add("[v](function:ValidateToken) [t](class:a.B) [](symbol:x) [y](function:)")
	f.Fuzz(func(t *testing.T, md string) {
		for _, ref := range ParseRefs(md) {
			if !strings.Contains(md, ref.Text) || (ref.Path == "") == (ref.Symbol == "") || ref.Line < 0 || ref.Column < 0 || !utf8.ValidString(ref.Path) && utf8.ValidString(md) {
				t.Fatalf("ref %+v from %q", ref, md)
			}
		}
	})
}

// Dialectic writes references as code, and as ranges: both are references.
func TestRefsInDialecticsForms(t *testing.T) {
	refs := ParseRefs("See [`src/auth.ts:23`][], [it](function:auth.Check), [src/a.go:3-7][], [`b.go:2:5`][] and [src/a.go:9][]; not [`x.go:1][] nor [a.go:x][] nor [z](method:Z).")
	want := []Ref{
		{Text: "[`src/auth.ts:23`][]", Path: "src/auth.ts", Line: 23},
		{Text: "[it](function:auth.Check)", Symbol: "function:auth.Check"},
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
		v, err := r.Present("see [b.go:1][]", base, ModeReplace, "", nil)
		if err != nil || len(v.Refs) != 1 || !v.Refs[0].OK || v.Refs[0].Path != "sub/b.go" {
			t.Fatalf("baseUri %s: %v %+v", base, err, v.Refs)
		}
	}
	// Seed 155: a base outside the root is refused, not ignored.
	for _, base := range []string{"file:///etc", "/tmp", "../elsewhere"} {
		if _, err := r.Present("see [b.go:1][]", base, ModeReplace, "", nil); err == nil || !strings.Contains(err.Error(), "not a folder in the workspace") {
			t.Fatalf("baseUri %s outside the root: %v", base, err)
		}
	}
	if _, err := r.Present("# Review\n\n## Pricing\n\nold", "", ModeReplace, "", nil); err != nil {
		t.Fatal(err)
	}
	v, err := r.Present("new risks", "", ModeUpdateSection, "Risks", nil)
	if err != nil || !strings.HasSuffix(v.Content, "## Risks\n\nnew risks\n") || !strings.Contains(v.Note, "appended as a new one") {
		t.Fatalf("missing section: %v %q %q", err, v.Content, v.Note)
	}
	if !strings.Contains(v.Content, "## Pricing\n\nold") {
		t.Fatalf("the existing section was lost: %q", v.Content)
	}
}

// F16 (seed 131): a reference written as a link to a line — [text](file:line),
// with a column or a range — is counted and checked like [file:line][]; a
// URL with a port is not one.
func TestLinkReferencesAreCheckedToo(t *testing.T) {
	r, _, _ := newReviews(t)
	v, err := r.Present("The [entry point](a.go:3) and [its package](a.go:1:9), [the range](a.go:1-3); [gone](b.go:2), "+
		"[past the end](a.go:40); not [a site](http://example.com:8080/) nor [a call](function:A).", "", ModeReplace, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		label, path string
		line        int
		ok          bool
	}
	var got []want
	for _, ref := range v.Refs {
		if ref.Symbol == "" {
			got = append(got, want{ref.Label(), ref.Path, ref.Line, ref.OK})
		}
	}
	exp := []want{{"entry point", "a.go", 3, true}, {"its package", "a.go", 1, true}, {"the range", "a.go", 1, true}, {"gone", "b.go", 2, false}, {"past the end", "a.go", 40, false}}
	if fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Fatalf("link references:\n got %v\nwant %v", got, exp)
	}
	if v.Refs[2].EndLine != 3 || v.Refs[1].Column != 9 {
		t.Fatalf("the range and the column: %+v %+v", v.Refs[2], v.Refs[1])
	}
}

// Seed 91: a review read after the code changed points at where its lines
// went: a line moved down is followed by its text; one edited in place
// stays where it was (a review describes the edit it proposed, and is read
// after it was applied); one past the file's end is broken.
func TestReviewReferencesFollowTheirLines(t *testing.T) {
	r, tr, _ := newReviews(t)
	if _, err := r.Present("[a.go:3][] and [the package](a.go:1)", "", ModeReplace, "", nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(tr.root, "a.go"), []byte("// Package a.\n\npackage a\n\nfunc A() {}\n"), 0o644)
	v, err := r.Version(0)
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Refs[0]; !got.OK || got.Line != 5 || got.Moved != 3 {
		t.Fatalf("a line moved down two: %+v", got)
	}
	if got := v.Refs[1]; !got.OK || got.Line != 3 || got.Moved != 1 {
		t.Fatalf("the package line moved: %+v", got)
	}
	os.WriteFile(filepath.Join(tr.root, "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644)
	if v, _ = r.Version(0); !v.Refs[0].OK || v.Refs[0].Line != 3 || v.Refs[0].Moved != 0 || !v.Refs[1].OK || v.Refs[1].Moved != 0 {
		t.Fatalf("a line edited in place, an unchanged one: %+v", v.Refs)
	}
	os.WriteFile(filepath.Join(tr.root, "a.go"), []byte("package a\n"), 0o644)
	if v, _ = r.Version(0); v.Refs[0].OK || !strings.Contains(v.Refs[0].Problem, `past the file's end`) {
		t.Fatalf("a line past the end: %+v", v.Refs[0])
	}
	// Twin: nothing changed, nothing moves; the stored review is as it was.
	os.WriteFile(filepath.Join(tr.root, "a.go"), []byte("package a\n\nfunc A() {}\n"), 0o644)
	if v, _ = r.Version(0); !v.Refs[0].OK || v.Refs[0].Line != 3 || v.Refs[0].Moved != 0 {
		t.Fatalf("unchanged: %+v", v.Refs[0])
	}
}

// Seed 155: an append with another baseUri resolves its own references
// against it and leaves the earlier sections' as they were resolved.
func TestEachSectionKeepsItsBase(t *testing.T) {
	r, tr, _ := newReviews(t)
	os.MkdirAll(filepath.Join(tr.root, "sub"), 0o755)
	os.WriteFile(filepath.Join(tr.root, "sub", "b.go"), []byte("package sub\n"), 0o644)
	if _, err := r.Present("## Sub\n\nsee [b.go:1][]", "sub", ModeReplace, "", nil); err != nil {
		t.Fatal(err)
	}
	v, err := r.Present("## Root\n\nand [a.go:1][]", "", ModeAppend, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, ref := range v.Refs {
		got[ref.Text] = fmt.Sprintf("%s ok=%v", ref.Path, ref.OK)
	}
	if got["[b.go:1][]"] != "sub/b.go ok=true" || got["[a.go:1][]"] != "a.go ok=true" || len(v.Refs) != 2 {
		t.Fatalf("after an append with another base: %v", got)
	}
	// Twin: a replace resolves everything against its own base.
	if v, _ = r.Present("see [b.go:1][]", "", ModeReplace, "", nil); len(v.Refs) != 1 || v.Refs[0].OK {
		t.Fatalf("a replace at the root: %+v", v.Refs)
	}
}
