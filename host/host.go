package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// Focus is what the operator points at: the active document and, when set,
// a selection in it (1-based lines and columns, end exclusive).
type Focus struct {
	Path      string `json:"path"`
	StartLine int    `json:"startLine,omitempty"`
	StartCol  int    `json:"startCol,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	EndCol    int    `json:"endCol,omitempty"`
}

// Host serves one workspace over the pipe.
type Host struct {
	WS          *Workspace
	Proposals   *Proposals
	Reviews     *Reviews
	Diagnostics *DiagnosticsRunner // nil: get_diagnostics says how to configure it
	// Rec records what the host does on its own (a review presented); nil
	// records nothing.
	Rec events.Recorder

	mu      sync.Mutex
	focus   *Focus
	version int

	// LanguageServers are the language servers the host may drive; nil:
	// DefaultLanguages (those installed).
	LanguageServers []Language

	edOnce sync.Once
	ed     *Editors
	lsOnce sync.Once
	ls     *Languages
	lines  lineCache // of the files language answers quote
}

// Languages returns the host's language servers, created on first use.
func (h *Host) Languages() *Languages {
	h.lsOnce.Do(func() { h.ls = newLanguages(h.WS, h.Rec, h.LanguageServers) })
	return h.ls
}

// Close stops the language servers the host started.
func (h *Host) Close() { h.Languages().Close() }

// Editors returns the editors attached to h (docs/pipe-protocol.md,
// "Editors"), wired to its proposals and reviews on first use.
func (h *Host) Editors() *Editors {
	h.edOnce.Do(func() {
		h.ed = newEditors(h.WS, h.Rec)
		if h.Proposals != nil {
			h.Proposals.Editors = h.ed
			h.Proposals.OnChange = func(pr *Proposal) { h.ed.Broadcast(pipe.NotifyProposalChanged, pr) }
		}
	})
	return h.ed
}

// scrub removes every secret rec's redactor knows from a document kept
// whole; without a redactor it returns v.
func scrub(rec any, v string) string {
	if r, ok := rec.(interface{ Redactor() *events.Redactor }); ok && r.Redactor() != nil {
		return r.Redactor().Scrub(v)
	}
	return v
}

// Handlers are the pipe commands the host serves.
func (h *Host) Handlers() map[string]pipe.Handler {
	h.Editors()
	return map[string]pipe.Handler{
		pipe.CmdEditorAttach:      h.editorAttach,
		pipe.CmdEditorFocus:       h.editorFocus,
		pipe.CmdEditorDocument:    h.editorDocument,
		pipe.CmdEditorDiagnostics: h.editorDiagnostics,
		pipe.CmdReviewsShow:       h.reviewShow,
		pipe.CmdFindDefinition:    h.positionCall("textDocument/definition", nil),
		pipe.CmdFindReferences:    h.positionCall("textDocument/references", map[string]any{"context": map[string]bool{"includeDeclaration": true}}),
		pipe.CmdHover:             h.hover,
		pipe.CmdDocumentSymbols:   h.documentSymbols,
		pipe.CmdFindSymbol:        h.findSymbol,
		pipe.CmdIDEQuery:          h.query,
		pipe.CmdActiveDocument:    h.activeDocument,
		pipe.CmdSelection:         h.selection,
		pipe.CmdSetFocus:          h.setFocus,
		pipe.CmdListProjects:      func(context.Context, pipe.Request) (any, error) { return h.WS.ListProjects() },
		pipe.CmdDiagnostics:       h.diagnostics,
		pipe.CmdProposeEdits:      h.propose,
		pipe.CmdPresentReview:     h.present,
		pipe.CmdProposalsList: func(context.Context, pipe.Request) (any, error) {
			list := h.Proposals.List()
			for i, pr := range list {
				list[i] = summary(pr)
			}
			return list, nil
		},
		pipe.CmdProposalsShow:   h.show,
		pipe.CmdReviewCommit:    h.commit,
		pipe.CmdReviewsList:     func(context.Context, pipe.Request) (any, error) { return h.Reviews.Versions(), nil },
		pipe.CmdWorkspaceTree:   func(context.Context, pipe.Request) (any, error) { t, err := h.WS.Tree(); return t, coded(err) },
		pipe.CmdWorkspaceFile:   h.file,
		pipe.CmdProposalsDecide: h.decide,
		pipe.CmdProposalsReset: func(_ context.Context, r pipe.Request) (any, error) {
			n, err := h.Proposals.Reset("operator")
			return map[string]int{"cleared": n}, err
		},
	}
}

// coded gives every error the host answers with a code (ToolError when it
// carries none).
func coded(err error) error {
	if err == nil {
		return nil
	}
	return events.AsErr(err, events.CodeToolError)
}

func decode(req pipe.Request, v any) error {
	if len(req.Payload) == 0 {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(req.Payload)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &events.Err{Code: events.CodeInvalidArguments, Msg: "payload: " + err.Error()}
	}
	return nil
}

func (h *Host) file(_ context.Context, req pipe.Request) (any, error) {
	var a struct {
		Path string `json:"path"`
	}
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	v, err := h.WS.View(a.Path)
	return v, coded(err)
}

func (h *Host) setFocus(_ context.Context, req pipe.Request) (any, error) {
	var f Focus
	if err := decode(req, &f); err != nil {
		return nil, err
	}
	rel, err := h.WS.Relative(f.Path) // editors send absolute paths
	if err != nil {
		return nil, coded(err)
	}
	b, err := h.WS.ReadFile(rel)
	if err != nil {
		return nil, coded(err)
	}
	if f.StartLine > 0 || f.EndLine > 0 {
		// A selection must lie in the file as it is now.
		if _, err := sliceText(string(b), f.StartLine, max(f.StartCol, 1), max(f.EndLine, f.StartLine), max(f.EndCol, 1)); err != nil {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: rel + ": " + err.Error()}
		}
	}
	f.Path = rel
	h.Editors().setFocus(nil, EditorDocument{}) // the operator's focus wins until an editor says otherwise
	h.mu.Lock()
	defer h.mu.Unlock()
	h.focus = &f
	h.version++
	return f, nil
}

var languages = map[string]string{".go": "go", ".ts": "typescript", ".tsx": "typescriptreact", ".js": "javascript",
	".py": "python", ".rs": "rust", ".java": "java", ".c": "c", ".h": "c", ".cpp": "cpp", ".cs": "csharp",
	".md": "markdown", ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".sh": "shellscript"}

func languageOf(rel string) string {
	if lang := languages[path.Ext(rel)]; lang != "" {
		return lang
	}
	return "plaintext"
}

// activeDocument returns the focused file (null when nothing has focus):
// as an attached editor holds it when one said what has focus.
func (h *Host) activeDocument(context.Context, pipe.Request) (any, error) {
	if f, buf, ok := h.Editors().Focus(); ok {
		doc := map[string]any{"path": f.Path, "language": f.Language, "version": f.Version, "unsaved": buf != nil}
		if buf != nil {
			doc["content"] = buf.Text
			return doc, nil
		}
		b, err := h.WS.ReadFile(f.Path)
		if err != nil {
			return nil, coded(err)
		}
		doc["content"] = string(b)
		return doc, nil
	}
	h.mu.Lock()
	f, v := h.focus, h.version
	h.mu.Unlock()
	if f == nil {
		return nil, nil
	}
	b, err := h.WS.ReadFile(f.Path)
	if err != nil {
		return nil, coded(err)
	}
	return map[string]any{"path": f.Path, "language": languageOf(f.Path), "content": string(b), "version": v}, nil
}

// selection returns the selected text (null when nothing is selected): an
// attached editor's when one said what has focus.
func (h *Host) selection(context.Context, pipe.Request) (any, error) {
	if f, _, ok := h.Editors().Focus(); ok {
		s := f.Selection
		if s == nil {
			return nil, nil
		}
		return map[string]any{"path": f.Path, "range": map[string]int{"startLine": s.StartLine, "startCol": s.StartCol,
			"endLine": s.EndLine, "endCol": s.EndCol}, "text": s.Text}, nil
	}
	h.mu.Lock()
	f := h.focus
	h.mu.Unlock()
	if f == nil || f.EndLine == 0 {
		return nil, nil
	}
	b, err := h.WS.ReadFile(f.Path)
	if err != nil {
		return nil, coded(err)
	}
	text, err := sliceText(string(b), f.StartLine, f.StartCol, f.EndLine, f.EndCol)
	if err != nil {
		return nil, &events.Err{Code: events.CodeDrift, Msg: err.Error()}
	}
	return map[string]any{"path": f.Path, "range": map[string]int{"startLine": f.StartLine, "startCol": f.StartCol,
		"endLine": f.EndLine, "endCol": f.EndCol}, "text": text}, nil
}

// sliceText cuts [start, end) out of s by 1-based line and column (bytes).
func sliceText(s string, sl, sc, el, ec int) (string, error) {
	lines := strings.SplitAfter(s, "\n")
	off := func(line, col int) (int, error) {
		if line < 1 || line > len(lines) || col < 1 || col > len(strings.TrimRight(lines[line-1], "\n"))+1 {
			return 0, fmt.Errorf("position %d:%d is outside the file (it changed since it was selected)", line, col)
		}
		n := 0
		for _, l := range lines[:line-1] {
			n += len(l)
		}
		return n + col - 1, nil
	}
	a, err := off(sl, sc)
	if err != nil {
		return "", err
	}
	b, err := off(el, ec)
	if err != nil {
		return "", err
	}
	if b < a {
		return "", fmt.Errorf("selection ends before it starts")
	}
	return s[a:b], nil
}

// ProposeArgs is the payload of propose_text_edits.
type ProposeArgs struct {
	Files       []FileChange `json:"files"`
	Description string       `json:"description,omitempty"`
}

func (h *Host) propose(_ context.Context, req pipe.Request) (any, error) {
	var a ProposeArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	// A configured secret never travels through a proposal: not into the
	// host's state, the operator's diff, nor a workspace file. It is
	// replaced by its redaction marker, which the diff shows.
	scrubbed := 0
	for i := range a.Files {
		for j := range a.Files[i].Edits {
			e := &a.Files[i].Edits[j]
			o, r := scrub(h.Rec, e.Original), scrub(h.Rec, e.Replacement)
			if o != e.Original || r != e.Replacement {
				scrubbed++
			}
			e.Original, e.Replacement = o, r
		}
	}
	pr, err := h.Proposals.Create(req.RequestID, scrub(h.Rec, a.Description), a.Files)
	if err != nil {
		return nil, coded(err)
	}
	out := map[string]any{"proposalId": pr.ID, "state": pr.State, "contentHash": pr.ContentHash, "approvalRequired": true,
		"message": "Nothing is written until an operator approves: tracebridge proposals approve " + pr.ID}
	if scrubbed > 0 {
		out["redacted"] = fmt.Sprintf("%d edit(s) contained a configured secret; the proposal carries its redaction marker instead", scrubbed)
	}
	return out, nil
}

// ShowArgs is the payload of proposals.show.
type ShowArgs struct {
	ID string `json:"id"`
}

// show returns one proposal whole: its edits and its diff (for a pending
// one, the diff approving it would apply now, or the code it would fail
// with), the diff cut at MaxPreviewBytes.
func (h *Host) show(_ context.Context, req pipe.Request) (any, error) {
	var a ShowArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	pr, ok := h.Proposals.Get(a.ID)
	if !ok {
		return nil, &events.Err{Code: events.CodeNoProposal, Msg: "no proposal " + a.ID + " (see `tracebridge proposals list`)"}
	}
	pr = h.Proposals.WithPreviews([]*Proposal{pr})[0]
	if len(pr.Preview) > MaxPreviewBytes {
		pr.Preview = pr.Preview[:MaxPreviewBytes] + fmt.Sprintf("\n… the diff is %d bytes; cut at %d\n", len(pr.Preview), MaxPreviewBytes)
	}
	return pr, nil
}

// DecideArgs is the payload of proposals.decide.
type DecideArgs struct {
	ID          string `json:"id"`
	Approve     bool   `json:"approve"`
	Skip        bool   `json:"skip,omitempty"` // defer: neither approve nor reject; it stays pending
	ContentHash string `json:"contentHash"`
	By          string `json:"by"`
}

// decide approves (and then applies) or rejects a proposal.
func (h *Host) decide(ctx context.Context, req pipe.Request) (any, error) {
	var a DecideArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	if a.Skip {
		if a.Approve {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "a decision either approves or skips, not both"}
		}
		pr, err := h.Proposals.Skip(a.ID, a.By)
		return pr, coded(err)
	}
	pr, err := h.Proposals.Decide(a.ID, a.Approve, a.ContentHash, a.By)
	if err != nil || !a.Approve {
		return pr, coded(err)
	}
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	pr, err = h.Proposals.Apply(actx, a.ID)
	if pr != nil && err != nil {
		return pr, nil // failed with a preview and a code: that is the answer
	}
	return pr, coded(err)
}

// PresentArgs is the payload of present_review.
type PresentArgs struct {
	Content string `json:"content"`
	BaseURI string `json:"baseUri,omitempty"`
	Mode    string `json:"mode"`
	Section string `json:"section,omitempty"`
}

// Presented is present_review's answer: what was kept, not the document
// (a review can be a megabyte; the AI has it already).
type Presented struct {
	Success bool   `json:"success"`
	Message string `json:"message"`
	Version int    `json:"version"`
	Refs    []Ref  `json:"refs"`
}

func (h *Host) present(ctx context.Context, req pipe.Request) (any, error) {
	var a PresentArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	rid, _ := events.ParseID(req.RequestID)
	find := func(name string) ([]Symbol, error) { return h.symbols(ctx, rid, name, "") }
	// Kept and shown redacted: the review is evidence, on disk and in the UI.
	v, err := h.Reviews.Present(scrub(h.Rec, a.Content), a.BaseURI, a.Mode, a.Section, find)
	if err != nil {
		return nil, coded(err)
	}
	sum := v.Summary()
	if h.Rec != nil {
		h.Rec.Emit(events.Event{Kind: events.KindReviewPresented, RequestID: rid, Outcome: events.OK, Attrs: events.A("workspace", h.WS.Dir(), "version", strconv.Itoa(v.Version), "mode", v.Mode, "section", v.Section, "content", v.Content, "bytes", strconv.Itoa(sum.Bytes), "refs", strconv.Itoa(sum.Refs), "brokenRefs", strconv.Itoa(sum.BrokenRefs))})
	}
	h.Editors().Broadcast(pipe.NotifyReviewPresented, sum)
	msg := fmt.Sprintf("Review version %d presented to the operator (%d bytes, %d references", v.Version, sum.Bytes, sum.Refs)
	if sum.BrokenRefs > 0 {
		msg += fmt.Sprintf(", %d broken: see refs", sum.BrokenRefs)
	}
	msg += ")."
	if v.Note != "" {
		msg += " Note: " + v.Note + "."
	}
	return Presented{Success: true, Message: msg, Version: v.Version, Refs: v.Refs}, nil
}

// reviewShow returns one review version whole ({"version":0}: the newest).
func (h *Host) reviewShow(_ context.Context, req pipe.Request) (any, error) {
	var a struct {
		Version int `json:"version"`
	}
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	return h.Reviews.Version(a.Version)
}

// CommitArgs is the payload of review.commit: the message (the review as a
// commit message).
type CommitArgs struct {
	Message string `json:"message"`
}

// commit runs `git commit` in the root with the files the applied
// proposals changed, and the review as the message: an operator's action,
// recorded. It commits nothing else of the worktree.
func (h *Host) commit(ctx context.Context, req pipe.Request) (any, error) {
	var a CommitArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Message) == "" {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "the commit message is empty: present a review first"}
	}
	seen := map[string]bool{}
	var paths []string
	for _, p := range h.Proposals.List() {
		if p.State != Applied {
			continue
		}
		for _, f := range p.Files {
			if !seen[f.Path] {
				seen[f.Path] = true
				paths = append(paths, f.Path)
			}
		}
	}
	if len(paths) == 0 {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "no applied proposal: approve one before committing"}
	}
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", append([]string{"-C", h.WS.Dir()}, args...)...).CombinedOutput()
		if err != nil {
			return "", &events.Err{Code: events.CodeToolError, Msg: "git " + args[0] + ": " + strings.TrimSpace(string(out))}
		}
		return strings.TrimSpace(string(out)), nil
	}
	if _, err := git(append([]string{"add", "--"}, paths...)...); err != nil {
		return nil, err
	}
	if _, err := git(append([]string{"commit", "-q", "-m", a.Message, "--"}, paths...)...); err != nil {
		return nil, err
	}
	rev, err := git("rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	if h.Rec != nil {
		id, _ := events.ParseID(req.RequestID)
		h.Rec.Emit(events.Event{Kind: events.KindReviewCommitted, RequestID: id, Outcome: events.OK,
			Attrs: events.A("commit", rev, "files", strings.Join(paths, ","), "subject", strings.SplitN(a.Message, "\n", 2)[0])})
	}
	return Committed{Commit: rev, Files: paths}, nil
}
