package host

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
)

// Review modes.
const (
	ModeReplace       = "replace"
	ModeAppend        = "append"
	ModeUpdateSection = "update-section"
)

// MaxReviewBytes caps a review document.
const MaxReviewBytes = 1 << 20

// Ref is a [file:line][] reference in a review, checked against the
// workspace.
type Ref struct {
	Text    string `json:"text"` // as written, e.g. [src/a.go:12][]
	Path    string `json:"path"`
	Line    int    `json:"line"`
	EndLine int    `json:"endLine,omitempty"` // [file:12-20][]: a range of lines
	Column  int    `json:"column,omitempty"`
	// Symbol is what a [text](function:Name) reference names
	// ("function:Name", "class:Name", "symbol:Name"); the language
	// server's answer fills Path and Line.
	Symbol  string `json:"symbol,omitempty"`
	OK      bool   `json:"ok"`
	Problem string `json:"problem,omitempty"`
	// Quote is the referenced line's text when the review was presented
	// (trimmed): how the reference is found again after the file changed
	// (follow.go). Moved is the line it was written against, when it moved.
	Quote string `json:"quote,omitempty"`
	Moved int    `json:"moved,omitempty"`
}

// ReviewVersion is one state of the review document.
type ReviewVersion struct {
	Version int       `json:"version"`
	Content string    `json:"content"`
	BaseURI string    `json:"baseUri,omitempty"`
	Mode    string    `json:"mode"`
	Section string    `json:"section,omitempty"`
	Refs    []Ref     `json:"refs"`
	Time    time.Time `json:"time"`
	// Note says what happened beyond the mode's plain meaning (an
	// update-section whose heading was missing appended a new section).
	Note string `json:"note,omitempty"`
}

// ReviewSummary is a version as lists carry it: no content, so a history
// of large reviews stays small (reviews.show fetches one version whole).
type ReviewSummary struct {
	Version    int       `json:"version"`
	Mode       string    `json:"mode"`
	Section    string    `json:"section,omitempty"`
	Bytes      int       `json:"bytes"`
	Refs       int       `json:"refs"`
	BrokenRefs int       `json:"brokenRefs"`
	Time       time.Time `json:"time"`
	Note       string    `json:"note,omitempty"`
}

// Summary returns v as lists carry it.
func (v ReviewVersion) Summary() ReviewSummary {
	s := ReviewSummary{Version: v.Version, Mode: v.Mode, Section: v.Section, Bytes: len(v.Content), Refs: len(v.Refs), Time: v.Time, Note: v.Note}
	for _, r := range v.Refs {
		if !r.OK {
			s.BrokenRefs++
		}
	}
	return s
}

// Reviews keeps the workspace's review document and all its versions.
type Reviews struct {
	ws       *Workspace
	path     string
	now      func() time.Time
	mu       sync.Mutex
	versions []ReviewVersion
}

// OpenReviews loads the versions kept in dir.
func OpenReviews(ws *Workspace, dir string, now func() time.Time) (*Reviews, error) {
	if now == nil {
		now = time.Now
	}
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	r := &Reviews{ws: ws, path: filepath.Join(dir, "reviews.json"), now: now}
	b, err := os.ReadFile(r.path)
	if err == nil {
		if err := json.Unmarshal(b, &r.versions); err != nil {
			return nil, fmt.Errorf("reviews %s: %w", r.path, err)
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return r, nil
}

// SymbolFinder looks names up in the workspace's language servers (nil:
// none answers).
type SymbolFinder func(name string) ([]Symbol, error)

// Present applies content to the document in mode and keeps the result as a
// new version. update-section replaces the body of the heading named
// section, up to the next heading of the same or a higher level. Symbol
// references are resolved with find.
func (r *Reviews) Present(content, baseURI, mode, section string, find SymbolFinder) (ReviewVersion, error) {
	switch {
	case strings.TrimSpace(content) == "":
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: "Content parameter is required: the review's markdown"}
	case len(content) > MaxReviewBytes:
		return ReviewVersion{}, &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("content is %d bytes; the limit is %d", len(content), MaxReviewBytes)}
	case mode != ModeReplace && mode != ModeAppend && mode != ModeUpdateSection:
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("Mode must be 'replace', 'update-section', or 'append' (got %q)", mode)}
	case mode == ModeUpdateSection && strings.TrimSpace(section) == "":
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: "Section parameter required for update-section mode"}
	case mode != ModeUpdateSection && section != "":
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: "section is only used with mode update-section"}
	case !insideRoot(r.ws, baseURI):
		// Seed 155: it was ignored, and every reference read from the root.
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("baseUri %q is not a folder in the workspace (%s): give file:///abs/dir or a path inside it, or leave it out for the root", baseURI, r.ws.Dir())}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	cur := ""
	if n := len(r.versions); n > 0 {
		cur = r.versions[n-1].Content
	}
	var doc, note string
	switch mode {
	case ModeReplace:
		doc = content
	case ModeAppend:
		doc = strings.TrimRight(cur, "\n")
		if doc != "" {
			doc += "\n\n"
		}
		doc += content
	case ModeUpdateSection:
		var headings []string
		if doc, headings = replaceSection(cur, section, content); headings != nil {
			note = fmt.Sprintf("the review had no section %q (its headings: %s): it was appended as a new one", section, strings.Join(headings, ", "))
		}
	}
	if len(doc) > MaxReviewBytes {
		// Refused before it is stored: the review stays as it was.
		return ReviewVersion{}, &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("the review would grow to %d bytes with this %s; a review holds at most %d: present a shorter one with mode replace", len(doc), mode, MaxReviewBytes)}
	}
	refs := r.check(ParseRefs(content), baseDir(r.ws, baseURI), find)
	if n := len(r.versions); n > 0 && mode != ModeReplace {
		refs = earlierRefs(r.versions[n-1].Refs, doc, refs)
	}
	v := ReviewVersion{Version: len(r.versions) + 1, Content: doc, BaseURI: baseURI, Mode: mode, Section: section,
		Refs: refs, Time: r.now().UTC(), Note: note}
	r.versions = append(r.versions, v)
	b, err := json.MarshalIndent(r.versions, "", "  ")
	if err == nil {
		err = durable.WriteFileAtomic(r.path, b, 0o600)
	}
	if err != nil {
		r.versions = r.versions[:len(r.versions)-1]
		return ReviewVersion{}, err
	}
	return v, nil
}

// baseDir is the workspace directory a baseUri names (file:///abs/dir or
// an absolute or workspace-relative path), relative to the root; "" for
// none or one outside the root.
func baseDir(ws *Workspace, baseURI string) string {
	rel, err := baseRel(ws, baseURI)
	if err != nil || rel == "." {
		return ""
	}
	return rel
}

// baseRel is baseURI as a folder relative to the root ("." for none).
func baseRel(ws *Workspace, baseURI string) (string, error) {
	if baseURI == "" {
		return ".", nil
	}
	p := strings.TrimPrefix(baseURI, "file://")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	return ws.Relative(strings.TrimSuffix(p, "/") + "/.")
}

// insideRoot reports whether baseURI names a folder inside the root (or
// the root).
func insideRoot(ws *Workspace, baseURI string) bool {
	_, err := baseRel(ws, baseURI)
	return err == nil
}

// earlierRefs are the references of an appended or updated review: those
// of the earlier text still in doc as they were resolved (each section
// keeps the baseUri it was presented with: seed 155), then the new text's.
func earlierRefs(before []Ref, doc string, fresh []Ref) []Ref {
	isNew := map[string]bool{}
	for _, ref := range fresh {
		isNew[ref.Text] = true
	}
	out := make([]Ref, 0, len(before)+len(fresh))
	for _, ref := range before {
		if !isNew[ref.Text] && strings.Contains(doc, ref.Text) {
			out = append(out, ref)
		}
	}
	return append(out, fresh...)
}

// Versions returns every version, oldest first, as lists carry them.
func (r *Reviews) Versions() []ReviewSummary {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]ReviewSummary, len(r.versions))
	for i, v := range r.versions {
		out[i] = v.Summary()
	}
	return out
}

// Latest returns the newest version's number (0: no review yet).
func (r *Reviews) Latest() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.versions)
}

// Version returns version n whole (0: the newest).
func (r *Reviews) Version(n int) (ReviewVersion, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n == 0 {
		n = len(r.versions)
	}
	if n < 1 || n > len(r.versions) {
		return ReviewVersion{}, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("no review version %d (there are %d)", n, len(r.versions))}
	}
	v := r.versions[n-1]
	v.Refs = r.follow(v.Refs) // where each reference's line is now
	return v, nil
}

// MaxReviewSymbols caps the distinct symbols one presentation asks the
// language servers about.
const MaxReviewSymbols = 32

// symbolKindsOf are the language server kinds each reference kind accepts.
var symbolKindsOf = map[string][]string{
	"function": {"function", "method", "constructor"},
	"class":    {"class", "struct", "interface", "enum"},
}

// workspaceFirst keeps the symbols defined in the workspace when there
// are any: a language server also answers from the module's dependencies
// and the standard library (gopls: a workspace's Validate beside every
// Validate it imports), which only count when the workspace has none.
// A symbol outside the root has an absolute path (Host.locations).
func workspaceFirst(syms []Symbol) []Symbol {
	var in []Symbol
	for _, s := range syms {
		if !filepath.IsAbs(s.Path) {
			in = append(in, s)
		}
	}
	if len(in) == 0 {
		return syms
	}
	return in
}

// resolveSymbol finds what kind:Name names: exactly one symbol of that kind
// and name (gopls names a method Type.Method).
func resolveSymbol(sym string, find SymbolFinder, asked int) Ref {
	kind, name, _ := strings.Cut(sym, ":")
	switch {
	case find == nil:
		return Ref{Problem: "no language server answers for this workspace: write it as [file:line][]"}
	case asked >= MaxReviewSymbols:
		return Ref{Problem: fmt.Sprintf("not looked up: a review resolves at most %d distinct symbols", MaxReviewSymbols)}
	}
	qual, short := "", name
	if i := strings.LastIndex(name, "."); i >= 0 {
		qual, short = name[:i], name[i+1:]
	}
	found, err := find(short)
	if err != nil {
		return Ref{Problem: events.AsErr(err, events.CodeLanguageServerFailed).Msg}
	}
	var exact []Symbol
	for _, s := range found {
		named := s.Name == name // gopls names a method Type.Method
		if qual == "" {
			named = named || strings.HasSuffix(s.Name, "."+short)
		} else if s.Name == short {
			// Type.Method or pkg.Func: the container says which
			named = s.Container == qual || strings.HasSuffix(s.Container, "/"+qual) || strings.HasSuffix(s.Container, "."+qual)
		}
		if named && (kind == "symbol" || slices.Contains(symbolKindsOf[kind], s.Kind)) {
			exact = append(exact, s)
		}
	}
	exact = workspaceFirst(exact)
	switch len(exact) {
	case 0:
		return Ref{Problem: fmt.Sprintf("the language server knows no %s named %s", kind, name)}
	case 1:
		return Ref{Path: exact[0].Path, Line: exact[0].Line, Column: exact[0].Column, OK: true}
	}
	sort.Slice(exact, func(i, j int) bool {
		return exact[i].Path < exact[j].Path || exact[i].Path == exact[j].Path && exact[i].Line < exact[j].Line
	})
	var where []string
	for _, s := range exact[:min(len(exact), 3)] {
		where = append(where, fmt.Sprintf("%s:%d", s.Path, s.Line))
	}
	return Ref{Problem: fmt.Sprintf("%d symbols are %ss named %s (%s): write the one meant as [file:line][]", len(exact), kind, name, strings.Join(where, ", "))}
}

var headingRE = regexp.MustCompile(`^(#{1,6})[ \t]+(.*?)[ \t#]*$`)

// replaceSection replaces the body under the heading titled section.
// replaceSection returns doc with section's body replaced, or, when doc
// has no such heading, with the section added at the end and the headings
// it has (non-nil).
func replaceSection(doc, section, body string) (string, []string) {
	lines := strings.Split(doc, "\n")
	start, level := -1, 0
	var headings []string
	for i, l := range lines {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		headings = append(headings, m[2])
		if start < 0 && strings.EqualFold(strings.TrimSpace(m[2]), strings.TrimSpace(section)) {
			start, level = i, len(m[1])
			continue
		}
		if start >= 0 && len(m[1]) <= level {
			out := append(append(append([]string{}, lines[:start+1]...), strings.TrimRight(body, "\n"), ""), lines[i:]...)
			return strings.Join(out, "\n"), nil
		}
	}
	if start < 0 {
		// As Dialectic's MVP does: a missing section is added at the end.
		out := strings.TrimRight(doc, "\n")
		if out != "" {
			out += "\n\n"
		}
		return out + "## " + strings.TrimSpace(section) + "\n\n" + strings.TrimRight(body, "\n") + "\n", append([]string{}, headings...)
	}
	return strings.Join(append(lines[:start+1], strings.TrimRight(body, "\n")), "\n") + "\n", nil
}

// refRE matches Dialectic's references: [file:line][], [file:line:col][],
// [file:line-line][] (a range), each also written as code, as Dialectic
// writes them: [`src/auth.ts:23`][].
var refRE = regexp.MustCompile("\\[(`?)([^\\[\\]\\n:`]+):(\\d{1,9})(?:-(\\d{1,9})|:(\\d{1,9}))?(`?)\\]\\[\\]")

// linkRefRE matches a reference written as a markdown link to a line:
// [text](file:line), [text](file:line:col), [text](file:line-line) (what
// VS Code resolves; seed 131). A URL's scheme is not a file: the line
// must follow the first colon.
var linkRefRE = regexp.MustCompile(`\[([^\[\]\n]*)\]\(([^()\s:]+):(\d{1,9})(?:-(\d{1,9})|:(\d{1,9}))?\)`)

// symbolRefRE matches the references Dialectic resolves through the IDE:
// [text](function:Name), [text](class:Name), [text](symbol:Name).
var symbolRefRE = regexp.MustCompile(`\[([^\[\]\n]*)\]\((function|class|symbol):([A-Za-z_$][A-Za-z0-9_$.]{0,200})\)`)

// ParseRefs finds the references of a markdown text, in order.
func ParseRefs(md string) []Ref {
	type at struct {
		pos int
		ref Ref
	}
	var found []at
	for _, m := range symbolRefRE.FindAllStringSubmatchIndex(md, -1) {
		found = append(found, at{m[0], Ref{Text: md[m[0]:m[1]], Symbol: md[m[4]:m[5]] + ":" + md[m[6]:m[7]]}})
	}
	for _, m := range refRE.FindAllStringSubmatchIndex(md, -1) {
		if ref, ok := fileRef(md, m); ok {
			found = append(found, at{m[0], ref})
		}
	}
	for _, m := range linkRefRE.FindAllStringSubmatchIndex(md, -1) {
		found = append(found, at{m[0], linkRef(md, m)})
	}
	sort.SliceStable(found, func(i, j int) bool { return found[i].pos < found[j].pos })
	var out []Ref
	for _, f := range found {
		out = append(out, f.ref)
	}
	return out
}

// fileRef is the [file:line][] reference refRE matched at m.
func fileRef(md string, m []int) (Ref, bool) {
	group := func(i int) string {
		if m[2*i] < 0 {
			return ""
		}
		return md[m[2*i]:m[2*i+1]]
	}
	if group(1) != group(6) {
		return Ref{}, false // a backtick on one side only: not a reference
	}
	line, _ := strconv.Atoi(group(3))
	end, col := 0, 0
	if g := group(4); g != "" {
		end, _ = strconv.Atoi(g)
	}
	if g := group(5); g != "" {
		col, _ = strconv.Atoi(g)
	}
	path := strings.TrimSpace(group(2))
	if path == "" {
		return Ref{}, false // "[ :3][]" names no file
	}
	return Ref{Text: group(0), Path: path, Line: line, EndLine: end, Column: col}, true
}

// linkRef is the [text](file:line) reference linkRefRE matched at m.
func linkRef(md string, m []int) Ref {
	num := func(i int) int {
		if m[2*i] < 0 {
			return 0
		}
		n, _ := strconv.Atoi(md[m[2*i]:m[2*i+1]])
		return n
	}
	return Ref{Text: md[m[0]:m[1]], Path: md[m[4]:m[5]], Line: num(3), EndLine: num(4), Column: num(5)}
}

// Label is the reference's text as a reader sees it: x of [x][], of
// [x](function:Name) and of [x](file:line).
func (r Ref) Label() string {
	if r.Symbol != "" || strings.HasSuffix(r.Text, ")") {
		return r.Text[1:strings.LastIndex(r.Text, "](")]
	}
	return strings.TrimSuffix(strings.TrimPrefix(r.Text, "["), "][]")
}

// check resolves each reference in the workspace: the file must exist and
// have the line; a symbol must be known to a language server, once.
func (r *Reviews) check(refs []Ref, base string, find SymbolFinder) []Ref {
	symbols := map[string]Ref{} // symbol → its resolution
	if find != nil {
		type answer struct {
			found []Symbol
			err   error
		}
		asked := map[string]answer{} // function:X and class:X ask once
		inner := find
		find = func(name string) ([]Symbol, error) {
			a, ok := asked[name]
			if !ok {
				a.found, a.err = inner(name)
				asked[name] = a
			}
			return a.found, a.err
		}
	}
	for i := range refs {
		ref := &refs[i]
		if ref.Symbol != "" {
			res, ok := symbols[ref.Symbol]
			if !ok {
				res = resolveSymbol(ref.Symbol, find, len(symbols))
				if res.OK {
					res.Quote = r.quote(res.Path, res.Line)
				}
				symbols[ref.Symbol] = res
			}
			ref.Path, ref.Line, ref.Column, ref.OK, ref.Problem, ref.Quote = res.Path, res.Line, res.Column, res.OK, res.Problem, res.Quote
			continue
		}
		if base != "" {
			ref.Path = path.Join(base, ref.Path)
		}
		b, err := r.ws.ReadFile(ref.Path)
		switch {
		case err != nil:
			ref.Problem = "file not readable in the workspace: " + err.Error()
		case ref.Line < 1 || ref.Line > bytes.Count(b, []byte("\n"))+1:
			ref.Problem = fmt.Sprintf("line %d is outside the file (%d lines)", ref.Line, bytes.Count(b, []byte("\n"))+1)
		case ref.EndLine != 0 && (ref.EndLine < ref.Line || ref.EndLine > bytes.Count(b, []byte("\n"))+1):
			ref.Problem = fmt.Sprintf("lines %d-%d are not a range inside the file (%d lines)", ref.Line, ref.EndLine, bytes.Count(b, []byte("\n"))+1)
		default:
			ref.OK, ref.Quote = true, lineText(strings.Split(string(b), "\n"), ref.Line)
		}
	}
	if refs == nil {
		refs = []Ref{}
	}
	return refs
}
