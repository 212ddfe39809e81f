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
	OK      bool   `json:"ok"`
	Problem string `json:"problem,omitempty"`
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

// Present applies content to the document in mode and keeps the result as a
// new version. update-section replaces the body of the heading named
// section, up to the next heading of the same or a higher level.
func (r *Reviews) Present(content, baseURI, mode, section string) (ReviewVersion, error) {
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
	v := ReviewVersion{Version: len(r.versions) + 1, Content: doc, BaseURI: baseURI, Mode: mode, Section: section,
		Refs: r.check(ParseRefs(doc), baseDir(r.ws, baseURI)), Time: r.now().UTC(), Note: note}
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
	if baseURI == "" {
		return ""
	}
	p := strings.TrimPrefix(baseURI, "file://")
	if u, err := url.PathUnescape(p); err == nil {
		p = u
	}
	rel, err := ws.Relative(strings.TrimSuffix(p, "/") + "/.")
	if err != nil || rel == "." {
		return ""
	}
	return rel
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
	return r.versions[n-1], nil
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

// ParseRefs finds the references of a markdown text, in order.
func ParseRefs(md string) []Ref {
	var out []Ref
	for _, m := range refRE.FindAllStringSubmatch(md, -1) {
		if m[1] != m[6] {
			continue // a backtick on one side only: not a reference
		}
		line, _ := strconv.Atoi(m[3])
		end, col := 0, 0
		if m[4] != "" {
			end, _ = strconv.Atoi(m[4])
		}
		if m[5] != "" {
			col, _ = strconv.Atoi(m[5])
		}
		path := strings.TrimSpace(m[2])
		if path == "" {
			continue // "[ :3][]" names no file
		}
		out = append(out, Ref{Text: m[0], Path: path, Line: line, EndLine: end, Column: col})
	}
	return out
}

// check resolves each reference in the workspace: the file must exist and
// have the line.
func (r *Reviews) check(refs []Ref, base string) []Ref {
	for i := range refs {
		ref := &refs[i]
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
			ref.OK = true
		}
	}
	if refs == nil {
		refs = []Ref{}
	}
	return refs
}
