package web

import (
	"regexp"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/host"
)

var hostile = []string{
	"<script>alert(1)</script>",
	"<img src=x onerror=alert(1)>",
	"[x](javascript:alert(1))",
	"[x](JaVaScRiPt:alert(1))",
	"[x](vbscript:msgbox)",
	"![x](javascript:alert(1))",
	"<a href=\"javascript:alert(1)\">x</a>",
	"<iframe src=//evil.example></iframe>",
	"<svg onload=alert(1)>",
	"[a.go:1][]\n\n[a.go:1]: javascript:alert(1)",
	"`<script>` stays code",
}

var (
	tagRE     = regexp.MustCompile(`<[^>]*>`)
	badTagRE  = regexp.MustCompile(`^</?(script|iframe|svg|object|embed|style|link|meta|form|input|base)\b`)
	handlerRE = regexp.MustCompile(`\son[a-z]+\s*=`)
	schemeRE  = regexp.MustCompile(`(href|src)\s*=\s*"\s*((javascript|vbscript)\s*:|data:text)`)
)

// unsafeHTML reports markup a review must never carry to the page: a
// script-capable tag, an event handler or a script URL in any tag.
func unsafeHTML(out string) string {
	for _, tag := range tagRE.FindAllString(strings.ToLower(out), -1) {
		if badTagRE.MatchString(tag) || handlerRE.MatchString(tag) || schemeRE.MatchString(tag) {
			return tag
		}
	}
	return ""
}

func TestReviewHTMLIsSanitized(t *testing.T) {
	for _, src := range hostile {
		if bad := unsafeHTML(string(renderReview(src, nil))); bad != "" {
			t.Errorf("%q rendered with %s:\n%s", src, bad, renderReview(src, nil))
		}
	}
	if out := string(renderReview("`<script>` stays code", nil)); !strings.Contains(out, "<code>&lt;script&gt;</code>") {
		t.Errorf("inline code: %s", out)
	}
}

func TestReviewReferencesLinkToTheLine(t *testing.T) {
	out := string(renderReview("# R\n\nSee [svc/a b.go:12][] and [svc/c.go:3:7][], twice [svc/a b.go:12][]; not [x.go:y][].", nil))
	for _, want := range []string{
		`<a href="/workspace?file=svc%2Fa+b.go#L12">svc/a b.go:12</a>`,
		`<a href="/workspace?file=svc%2Fc.go#L3">svc/c.go:3:7</a>`,
		"[x.go:y][]",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}

func TestCommitMessage(t *testing.T) {
	got := commitMessage("# Price change\n\nThe price moves to **120** in [svc/price.go:4][].\n\n\n\n## Risks\n\n- `Tax` is unchanged\n")
	want := "Price change\n\nThe price moves to 120 in svc/price.go:4.\n\nRisks:\n\n- Tax is unchanged\n"
	if got != want {
		t.Errorf("commit message:\n%q\nwant\n%q", got, want)
	}
	if got := commitMessage("just a line"); got != "just a line\n" {
		t.Errorf("one line: %q", got)
	}
}

// FuzzRenderReview: whatever a review says, the page gets no script, no
// event handler and no javascript: link.
func FuzzRenderReview(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Add("# T\n\n[a.go:1][] [b.go:2:3][]\n\n| a | b |\n|---|---|\n| <b>x</b> | y |\n")
	f.Fuzz(func(t *testing.T, src string) {
		out := string(renderReview(src, nil))
		if bad := unsafeHTML(out); bad != "" {
			t.Fatalf("%q rendered with %s:\n%s", src, bad, out)
		}
		commitMessage(src)
	})
}

// A review's links to other services on this machine are text: the
// operator's browser is never sent to another local listener by a click.
func TestReviewLinksToLocalServicesAreInert(t *testing.T) {
	for _, dest := range []string{
		"http://127.0.0.1:9999/log", "http://localhost:9999/", "http://LOCALHOST./x", "http://tb-0011.localhost:1/",
		"http://[::1]:8080/", "http://0.0.0.0:80/", "http://2130706433:80/", "http://0x7f000001/", "http://127.1:9/",
		"//127.0.0.1:9999/log", "https://127.9.9.9/",
	} {
		for _, src := range []string{"see [the log](" + dest + ") now", "<" + dest + ">", "![img](" + dest + ")", "[r][]\n\n[r]: " + dest} {
			out := string(renderReview(src, nil))
			if strings.Contains(out, "href=") || strings.Contains(out, "src=") {
				t.Errorf("%q rendered a live link:\n%s", src, out)
			}
			if !strings.Contains(out, "link to a local service removed") && !strings.HasPrefix(src, "<//") { // <//x> is not an autolink
				t.Errorf("%q: no marker:\n%s", src, out)
			}
		}
	}
	// Other links and the workspace references stay links.
	for _, src := range []string{"[docs](https://go.dev/doc/)", "[a.go:1][]", "[rel](/runs)"} {
		if out := string(renderReview(src, nil)); !strings.Contains(out, "<a href=") {
			t.Errorf("%q lost its link:\n%s", src, out)
		}
	}
}

// A Dialectic reference written as code is a link to its line too.
func TestBacktickReferencesLink(t *testing.T) {
	out := string(renderReview("See [`svc/a.go:12`][] and [svc/b.go:3-5][].", nil))
	for _, want := range []string{`<a href="/workspace?file=svc%2Fa.go#L12"><code>svc/a.go:12</code></a>`, `<a href="/workspace?file=svc%2Fb.go#L3">svc/b.go:3-5</a>`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
}

// A symbol reference the host resolved links to its line; one it could not
// (or one resolved outside the workspace) is struck through; one it did not
// look up is its text.
func TestSymbolReferencesLinkWhereResolved(t *testing.T) {
	src := "[check](function:ValidateToken), [which](function:Valid), [fmt](function:Println) and [raw](class:Nope)"
	refs := []host.Ref{
		{Text: "[check](function:ValidateToken)", Symbol: "function:ValidateToken", Path: "auth/a.go", Line: 4, OK: true},
		{Text: "[which](function:Valid)", Symbol: "function:Valid", Problem: "2 symbols"},
		{Text: "[fmt](function:Println)", Symbol: "function:Println", Path: "/usr/lib/go/src/fmt/print.go", Line: 313, OK: true},
	}
	out := string(renderReview(src, refs))
	for _, want := range []string{`<a href="/workspace?file=auth%2Fa.go#L4">check</a>`, `<del>which</del>`, `<del>fmt</del>`} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, "function:") || strings.Contains(out, "class:") || strings.Count(out, "<a ") != 1 || !strings.Contains(out, " and raw") {
		t.Errorf("rendered:\n%s", out)
	}
}

// Seeds 81, 155 and 131: what the host resolved is what the page links —
// the file under the review's baseUri, a broken reference struck through,
// [text](file:line) a link to the workspace view, not a dead relative URL.
func TestReviewLinksWhatTheHostResolved(t *testing.T) {
	src := "See [the entry](a.go:3), [a.go:1][] and [gone](b.go:1)."
	refs := host.ParseRefs(src)
	refs[0].Path, refs[0].OK = "sub/a.go", true
	refs[1].Path, refs[1].OK = "sub/a.go", true
	refs[2].Path, refs[2].Problem = "sub/b.go", "file not readable in the workspace"
	out := string(renderReview(src, refs))
	for _, want := range []string{
		`<a href="/workspace?file=sub%2Fa.go#L3">the entry</a>`,
		`<a href="/workspace?file=sub%2Fa.go#L1">a.go:1</a>`,
		`<del>gone</del>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %s in\n%s", want, out)
		}
	}
	// Not looked at by the host: linked as written.
	if out := string(renderReview("See [the entry](a.go:3).", nil)); !strings.Contains(out, `<a href="/workspace?file=a.go#L3">the entry</a>`) {
		t.Errorf("an unresolved [text](file:line):\n%s", out)
	}
}
