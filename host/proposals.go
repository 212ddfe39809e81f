package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"
	"github.com/tracebridge/tracebridge/internal/textdiff"

	"github.com/tracebridge/tracebridge/events"
)

// Proposals holds the proposals of one workspace. State lives in a JSON file
// (replaced atomically on every transition); an apply in progress leaves a
// journal that Open finishes. All methods are safe for concurrent use and
// each transition happens exactly once.
type Proposals struct {
	ws      *Workspace
	rec     events.Recorder
	dir     string // state dir
	now     func() time.Time
	mu      sync.Mutex
	applyMu sync.Mutex // held through an apply; mu is let go while an editor answers
	byID    map[string]*Proposal

	// Editors, when set, hold unsaved buffers: a file an editor holds with
	// unsaved changes is proposed against, checked against and applied to
	// the editor's text, never written over on disk.
	Editors *Editors
	// OnChange, when set, is told every transition (a summary of the
	// proposal), in order, with the state's lock held: it must not block.
	OnChange func(*Proposal)
}

// journal is written, synced, before the first file of a set is replaced.
type journal struct {
	ID    string         `json:"id"`
	Files []journalEntry `json:"files"`
	// Editor names the files an editor applied to its unsaved buffer.
	Editor []string `json:"editor,omitempty"`
}

type journalEntry struct {
	Path     string `json:"path"`
	BaseHash string `json:"baseHash"`
	NewHash  string `json:"newHash"`
	New      []byte `json:"new"`
}

// OpenProposals loads the state in dir and finishes an apply a crash
// interrupted: files still at their base are rolled forward (the approval
// and the intent were durable), files already new are kept, and a file that
// is neither marks the proposal failed with Drift, naming each file's state.
func OpenProposals(ws *Workspace, rec events.Recorder, dir string, now func() time.Time) (*Proposals, error) {
	if now == nil {
		now = time.Now
	}
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &Proposals{ws: ws, rec: rec, dir: dir, now: now, byID: map[string]*Proposal{}}
	b, err := os.ReadFile(p.statePath())
	if err == nil {
		var list []*Proposal
		if err := json.Unmarshal(b, &list); err != nil {
			return nil, fmt.Errorf("proposals state %s: %w", p.statePath(), err)
		}
		for _, pr := range list {
			p.byID[pr.ID] = pr
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := p.recover(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Proposals) statePath() string   { return filepath.Join(p.dir, "proposals.json") }
func (p *Proposals) journalPath() string { return filepath.Join(p.dir, "apply.journal") }

// saveLocked writes the whole state atomically.
func (p *Proposals) saveLocked() error {
	list := make([]*Proposal, 0, len(p.byID))
	for _, pr := range p.byID {
		list = append(list, pr)
	}
	sort.Slice(list, func(i, j int) bool { return list[i].ID < list[j].ID })
	b, err := json.MarshalIndent(list, "", "  ")
	if err != nil {
		return err
	}
	return durable.WriteFileAtomic(p.statePath(), b, 0o600)
}

func (p *Proposals) emit(pr *Proposal, kind string, code events.Code, attrs events.Attrs) {
	attrs = attrs.With(events.AttrProposal, pr.ID).With("state", pr.State) // a caller's attributes stay its own
	req, _ := events.ParseID(pr.RequestID)
	p.rec.Emit(events.Event{Kind: kind, RequestID: req, Outcome: events.OutcomeOf(code), Code: code, Attrs: attrs})
	if p.OnChange != nil {
		p.OnChange(summary(pr))
	}
}

// current returns a file's text as the user sees it: an editor's unsaved
// buffer when one holds the file, else the file on disk (nil when nothing
// is there and the change creates it).
func (p *Proposals) current(f FileChange) ([]byte, *Buffer, error) {
	if b, ok := p.Editors.Buffer(f.Path); ok {
		// Through an editor's buffer the same confinement holds as on
		// disk: a symlink (say, to a file outside the root) is refused,
		// even if it became one after the editor reported the buffer.
		if _, err := p.ws.regular(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, nil, err
		}
		return []byte(b.Text), &b, nil
	}
	if f.Create {
		if p.ws.Absent(f.Path) {
			return nil, nil, nil
		}
		return nil, nil, &events.Err{Code: events.CodeDrift, Msg: f.Path + " exists now; the proposal was to create it"}
	}
	cur, err := p.ws.ReadFile(f.Path)
	return cur, nil, err
}

// base returns a file's text as the user sees it, and whether the change
// creates it.
func (p *Proposals) base(f *FileChange) ([]byte, *Buffer, error) {
	creates := len(f.Edits) == 1 && f.Edits[0].Original == ""
	if creates && p.ws.Absent(f.Path) {
		if _, held := p.Editors.Buffer(f.Path); !held {
			f.Create = true
			return nil, nil, nil
		}
	}
	return p.current(*f)
}

// flush waits until the events of pr's request are durable in the log.
func (p *Proposals) flush(pr *Proposal) error {
	req, err := events.ParseID(pr.RequestID)
	if err != nil {
		return nil // a proposal made outside a request has no run to close
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.rec.Flush(ctx, req); err != nil {
		return &events.Err{Code: events.CodeLogUnavailable, Msg: "the outcome of proposal " + pr.ID + " could not be recorded: " + err.Error()}
	}
	return nil
}

// Create records a pending proposal for files, taking each file's current
// hash as its base (a file that does not exist, with one edit whose original
// is empty, is created). Nothing is written to the workspace.
func (p *Proposals) Create(requestID, description string, files []FileChange) (*Proposal, error) {
	if len(description) > MaxDescriptionBytes {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("the description is %d bytes; at most %d: say why in a few sentences", len(description), MaxDescriptionBytes)}
	}
	if len(files) == 0 {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "a proposal needs at least one file"}
	}
	size := 0
	for _, f := range files {
		for _, e := range f.Edits {
			size += len(e.Original) + len(e.Replacement)
		}
	}
	if size > MaxProposalBytes {
		return nil, &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("the edits add up to %d bytes; a proposal holds at most %d: split it into several proposals", size, MaxProposalBytes)}
	}
	seen := map[string]bool{}
	for i := range files {
		rel, err := Clean(files[i].Path)
		if err != nil {
			return nil, err
		}
		if seen[rel] {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: rel + " appears twice; put all its edits in one entry"}
		}
		seen[rel] = true
		files[i].Path = rel
		if len(files[i].Edits) == 0 {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: rel + " has no edits"}
		}
		cur, buf, err := p.base(&files[i])
		if err != nil {
			return nil, err
		}
		if _, err := applyChange(files[i], cur); err != nil {
			return nil, err // refuse now what could never apply
		}
		files[i].BaseHash, files[i].InBuffer = baseHash(files[i], cur), buf != nil
	}
	pr := &Proposal{ID: p.rec.NewID().String(), RequestID: requestID, State: Pending, Files: files,
		ContentHash: contentHash(files), Description: description, Created: p.now().UTC()}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byID[pr.ID] = pr
	if err := p.saveLocked(); err != nil {
		delete(p.byID, pr.ID)
		return nil, err
	}
	p.emit(pr, events.KindProposalCreated, "", events.A("files", fmt.Sprint(len(files)), "contentHash", pr.ContentHash, "description", description))
	return clone(pr), nil
}

// Decide approves or rejects a pending proposal. contentHash must be the
// hash the operator was shown. Exactly one decision wins.
func (p *Proposals) Decide(id string, approve bool, contentHash, by string) (*Proposal, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, err := p.inStateLocked(id, Pending, events.CodeNotPending)
	if err != nil {
		return nil, err
	}
	if contentHash != pr.ContentHash {
		return nil, &events.Err{Code: events.CodeHashChanged, Msg: "the decision names other content than the proposal holds"}
	}
	pr.State, pr.Decided, pr.DecidedBy = Rejected, p.now().UTC(), by
	kind := events.KindProposalRejected
	if approve {
		pr.State, kind = Approved, events.KindProposalApproved
	}
	if err := p.saveLocked(); err != nil {
		pr.State = Pending
		return nil, err
	}
	p.emit(pr, kind, "", events.A("by", by))
	return clone(pr), nil
}

// Skip defers deciding a pending proposal: it stays pending, and
// proposal.deferred records who put it off.
func (p *Proposals) Skip(id, by string) (*Proposal, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, err := p.inStateLocked(id, Pending, events.CodeNotPending)
	if err != nil {
		return nil, err
	}
	pr.Deferred = p.now().UTC()
	if err := p.saveLocked(); err != nil {
		return nil, err
	}
	p.emit(pr, events.KindProposalDeferred, "", events.A("by", by))
	return clone(pr), nil
}

// inStateLocked returns proposal id if it is in state want, else an error
// with code.
func (p *Proposals) inStateLocked(id, want string, code events.Code) (*Proposal, error) {
	pr := p.byID[id]
	switch {
	case pr == nil:
		return nil, &events.Err{Code: events.CodeNoProposal, Msg: "no proposal " + id}
	case pr.State != want:
		return nil, &events.Err{Code: code, Msg: fmt.Sprintf("proposal %s is %s, not %s", id, pr.State, want)}
	}
	return pr, nil
}

// Apply writes an approved proposal: every file must still have its base
// hash (else Drift) and every edit's original text must occur exactly once
// (else Ambiguous); all new contents are computed before anything is
// written, the intent is durable in the log and the journal before the
// first write, and the set is applied whole.
func (p *Proposals) Apply(ctx context.Context, id string) (*Proposal, error) {
	p.applyMu.Lock() // one apply at a time; the state lock is let go while an editor answers
	defer p.applyMu.Unlock()
	p.mu.Lock()
	locked := true
	defer func() {
		if locked {
			p.mu.Unlock()
		}
	}()
	pr, err := p.inStateLocked(id, Approved, events.CodeNotApproved)
	if err != nil {
		return nil, err
	}
	j := journal{ID: id}
	var inEditor []bufferEdit
	var preview strings.Builder
	for _, f := range pr.Files {
		cur, buf, err := p.current(f)
		if err != nil {
			e := events.AsErr(err, events.CodePathRefused)
			return p.failLocked(pr, e.Code, e.Msg)
		}
		if baseHash(f, cur) != f.BaseHash {
			where := " changed since the proposal was made"
			if buf != nil {
				where = " has unsaved changes in the editor that the proposal was not made against: save or undo them, and propose again"
			}
			return p.failLocked(pr, events.CodeDrift, f.Path+where)
		}
		next, err := applyChange(f, cur)
		if err != nil {
			e := events.AsErr(err, events.CodeAmbiguous)
			return p.failLocked(pr, e.Code, e.Msg)
		}
		preview.WriteString(textdiff.Unified(f.Path, string(cur), string(next)))
		if buf != nil {
			inEditor = append(inEditor, bufferEdit{*buf, next})
			j.Editor = append(j.Editor, f.Path)
			continue
		}
		j.Files = append(j.Files, journalEntry{Path: f.Path, BaseHash: f.BaseHash, NewHash: hashBytes(next), New: next})
	}
	pr.Preview = scrub(p.rec, preview.String())
	pr.Applying = true
	if err := p.saveLocked(); err != nil {
		return nil, err
	}
	// Evidence first: the intent, durable, then the journal.
	p.emit(pr, events.KindProposalApplying, "", events.A("files", fmt.Sprint(len(j.Files)+len(inEditor)), "editorFiles", strings.Join(j.Editor, ",")))
	req, _ := events.ParseID(pr.RequestID)
	if err := p.rec.Flush(ctx, req); err != nil {
		return nil, &events.Err{Code: events.CodeLogUnavailable, Msg: "the intent to apply could not be recorded, so nothing was written: " + err.Error()}
	}
	// Unsaved buffers first, each an undoable edit in its editor: one the
	// editor refuses (its text moved on) fails the proposal before any file
	// is written on disk. The host's other operations do not wait on an
	// editor: the state lock is let go meanwhile (the proposal is marked
	// applying; applies are serialized by applyMu).
	p.mu.Unlock()
	locked = false
	failed := p.applyInEditors(ctx, pr, inEditor, j.Editor)
	p.mu.Lock()
	locked = true
	if p.byID[id] != pr {
		return nil, &events.Err{Code: events.CodeNotApproved, Msg: "proposal " + id + " was reset while an editor applied it"}
	}
	if failed != nil {
		pr.Applying = false
		return p.failLocked(pr, failed.Code, failed.Msg)
	}
	beforeJournal()
	jb, _ := json.Marshal(j)
	if err := durable.WriteFileAtomic(p.journalPath(), jb, 0o600); err != nil {
		return nil, err
	}
	if err := p.finishLocked(j); err != nil {
		return nil, err
	}
	return clone(pr), nil
}

// bufferEdit is a new text for an editor's unsaved buffer.
type bufferEdit struct {
	buf  Buffer
	next []byte
}

// applyInEditors asks each editor holding one of pr's buffers to take its
// new text, in order; the first refusal ends it, saying which were applied
// before (undoable there).
func (p *Proposals) applyInEditors(ctx context.Context, pr *Proposal, edits []bufferEdit, paths []string) *events.Err {
	for i, b := range edits {
		if err := p.Editors.ApplyToBuffer(ctx, pr.RequestID, pr.ID, b.buf, b.next); err != nil {
			e := events.AsErr(err, events.CodeToolError)
			msg := e.Msg
			if i > 0 {
				msg += fmt.Sprintf(" (already applied in the editor, undoable there: %s)", strings.Join(paths[:i], ", "))
			}
			return &events.Err{Code: e.Code, Msg: msg}
		}
	}
	return nil
}

// finishLocked replaces the journal's files, records the outcome and
// removes the journal. A file already new is left; one that is neither base
// nor new fails the set with Drift.
func (p *Proposals) finishLocked(j journal) error {
	pr := p.byID[j.ID]
	var problems []string
	written := 0
	for _, e := range j.Files {
		cur, err := p.ws.ReadFile(e.Path)
		if e.BaseHash == "" && p.ws.Absent(e.Path) {
			cur, err = nil, nil // a file the proposal creates, not yet written
		}
		switch {
		case err != nil:
			problems = append(problems, e.Path+": "+err.Error())
		case hashBytes(cur) == e.NewHash:
			// written before a crash
		case e.BaseHash != "" && hashBytes(cur) != e.BaseHash, e.BaseHash == "" && cur != nil:
			problems = append(problems, e.Path+" was changed by someone else during the apply")
		default:
			if err := p.ws.WriteFileVia(e.Path, e.New, e.tempName(), func() { beforeRename(written + 1) }); err != nil {
				problems = append(problems, e.Path+": "+err.Error())
				continue
			}
			written++
			afterWrite(written)
		}
	}
	// A crash between a temporary file's sync and its rename left it
	// behind; the journal knows its name.
	for _, e := range j.Files {
		p.ws.RemoveTemp(e.Path, e.tempName())
	}
	if pr != nil {
		pr.Applying = false
		if len(problems) > 0 {
			pr.State, pr.Code, pr.Message = Failed, events.CodeDrift, strings.Join(problems, "; ")
			p.emit(pr, events.KindProposalFailed, events.CodeDrift, events.A("error", pr.Message))
		} else {
			pr.State = Applied
			p.emit(pr, events.KindProposalApplied, "", events.A("preview", pr.Preview, "via", via(j), "editorFiles", strings.Join(j.Editor, ",")))
		}
		// The outcome durable in the log before the state and the journal
		// forget the apply: a crash in between finishes it again.
		if err := p.flush(pr); err != nil {
			return err
		}
		if err := p.saveLocked(); err != nil {
			return err
		}
	}
	if err := os.Remove(p.journalPath()); err != nil {
		return err
	}
	return durable.SyncDir(p.dir)
}

// via says which path applied a proposal: "disk", "editor" (every file was
// an editor's unsaved buffer) or "disk+editor".
func via(j journal) string {
	switch {
	case len(j.Editor) == 0:
		return "disk"
	case len(j.Files) == 0:
		return "editor"
	}
	return "disk+editor"
}

// tempName is the temporary file a journal entry is written through: known
// from the journal, so recovery can remove it after a crash.
func (e journalEntry) tempName() string { return ".tb-" + e.NewHash[:min(16, len(e.NewHash))] + ".tmp" }

func (p *Proposals) recover() error {
	b, err := os.ReadFile(p.journalPath())
	if errors.Is(err, os.ErrNotExist) {
		return p.closeInterrupted()
	}
	if err != nil {
		return err
	}
	var j journal
	if err := json.Unmarshal(b, &j); err != nil {
		return fmt.Errorf("apply journal %s is unreadable (%v); inspect it and remove it to continue", p.journalPath(), err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.finishLocked(j)
}

// closeInterrupted fails the proposals whose apply began (proposal.applying
// may be on record) but left no journal: the process stopped before the
// journal, so before any file was written.
func (p *Proposals) closeInterrupted() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var closed []*Proposal
	for _, pr := range p.byID {
		if pr.Applying && pr.State == Approved {
			pr.State, pr.Applying = Failed, false
			pr.Code, pr.Message = events.CodeApplyInterrupted, "the host stopped while applying, before any file was written"
			p.emit(pr, events.KindProposalFailed, pr.Code, events.A("error", pr.Message))
			closed = append(closed, pr)
		}
	}
	if len(closed) == 0 {
		return nil
	}
	// The outcome durable in the log before the state forgets the apply.
	for _, pr := range closed {
		if err := p.flush(pr); err != nil {
			return err
		}
	}
	return p.saveLocked()
}

func (p *Proposals) failLocked(pr *Proposal, code events.Code, msg string) (*Proposal, error) {
	pr.State, pr.Code, pr.Message = Failed, code, msg
	p.emit(pr, events.KindProposalFailed, code, events.A("error", msg))
	if err := p.flush(pr); err != nil {
		return nil, err
	}
	if err := p.saveLocked(); err != nil {
		return nil, err
	}
	return clone(pr), &events.Err{Code: code, Msg: msg}
}

// Get returns one proposal.
func (p *Proposals) Get(id string) (*Proposal, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pr, ok := p.byID[id]
	return clone(pr), ok
}

// List returns every proposal, oldest first.
func (p *Proposals) List() []*Proposal {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*Proposal, 0, len(p.byID))
	for _, pr := range p.byID {
		out = append(out, clone(pr))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Reset rejects every proposal not yet applied — pending, or approved and
// waiting to be applied — recording proposal.reset for each, and keeps the
// terminal ones with their previews.
func (p *Proposals) Reset(by string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, pr := range p.byID {
		if pr.State == Pending || pr.State == Approved {
			pr.State, pr.Decided, pr.DecidedBy, pr.Message = Rejected, p.now().UTC(), by, "cleared by reset"
			p.emit(pr, events.KindProposalReset, "", events.A("by", by))
			n++
		}
	}
	return n, p.saveLocked()
}

// baseHash is what a change is checked against: the hash of the text, or ""
// for a file the change creates.
func baseHash(f FileChange, cur []byte) string {
	if f.Create {
		return ""
	}
	return hashBytes(cur)
}

// applyChange returns the file's new content: the one edit's replacement
// for a file it creates, else cur with each edit applied.
func applyChange(f FileChange, cur []byte) ([]byte, error) {
	if f.Create {
		return []byte(f.Edits[0].Replacement), nil
	}
	return applyEdits(f.Path, cur, f.Edits)
}

// applyEdits returns content with each edit applied, each original text
// matching exactly once.
func applyEdits(path string, content []byte, edits []Edit) ([]byte, error) {
	s := string(content)
	for i, e := range edits {
		if e.Original == "" {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("%s: edit %d has no original text (an empty original creates a file that does not exist, as the only edit of its entry)", path, i+1)}
		}
		switch n := strings.Count(s, e.Original); n {
		case 1:
			s = strings.Replace(s, e.Original, e.Replacement, 1)
		case 0:
			return nil, &events.Err{Code: events.CodeDrift, Msg: fmt.Sprintf("%s: edit %d's original text is not in the file", path, i+1)}
		default:
			return nil, &events.Err{Code: events.CodeAmbiguous, Msg: fmt.Sprintf("%s: edit %d's original text occurs %d times; include more context so it matches once", path, i+1, n)}
		}
	}
	return []byte(s), nil
}

func clone(pr *Proposal) *Proposal {
	if pr == nil {
		return nil
	}
	c := *pr
	c.Files = append([]FileChange(nil), pr.Files...)
	return &c
}
