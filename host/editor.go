package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// EditorCallTimeout bounds the host's requests to an editor.
const EditorCallTimeout = 10 * time.Second

// The unsaved text the host keeps: at most MaxEditorBuffers bytes per
// editor and MaxBuffers in all; a buffer past either is refused TooLarge
// (the editor still has it; get_active_document answers from the file).
const (
	MaxEditorBuffers = 64 << 20
	MaxBuffers       = 256 << 20
)

// Editors are the editors attached to a host (docs/pipe-protocol.md,
// "Editors"): what they say — the focused document and its unsaved text,
// the selection, their diagnostics — and the way back to them:
// notifications, and edits applied to a buffer with unsaved changes.
type Editors struct {
	ws  *Workspace
	rec events.Recorder

	mu      sync.Mutex
	conns   map[*pipe.Peer]*editorConn
	focus   *editorFocus
	buffers map[string]Buffer // unsaved texts by workspace-relative path
	last    *editorConn       // the editor that pushed diagnostics last
	// room bounds the unsaved text kept: per editor, in all (NewEditors:
	// MaxEditorBuffers, MaxBuffers).
	room struct{ perEditor, all int }
}

// Buffer is a document an editor holds with unsaved changes.
type Buffer struct {
	Path    string // workspace-relative
	Version int    // the editor's version of the document
	Text    string
	peer    *pipe.Peer
}

// Selection is what an editor says is selected: 1-based lines and the
// editor's own columns, and the text itself (so no column convention has to
// agree between editor and host).
type Selection struct {
	StartLine int    `json:"startLine"`
	StartCol  int    `json:"startCol"`
	EndLine   int    `json:"endLine"`
	EndCol    int    `json:"endCol"`
	Text      string `json:"text"`
}

type editorFocus struct {
	Path, Language string
	Version        int
	Selection      *Selection
	peer           *pipe.Peer
}

type editorConn struct {
	peer          *pipe.Peer
	name, version string
	queue         chan pipe.Notification
	diags         []Diagnostic
	hasDiags      bool
}

// newEditors returns the editor state of a host serving ws.
func newEditors(ws *Workspace, rec events.Recorder) *Editors {
	e := &Editors{ws: ws, rec: rec, conns: map[*pipe.Peer]*editorConn{}, buffers: map[string]Buffer{}}
	e.room.perEditor, e.room.all = MaxEditorBuffers, MaxBuffers
	return e
}

func (e *Editors) emit(ev events.Event) {
	if e.rec != nil {
		e.rec.Emit(ev)
	}
}

// EditorAttach is the payload of editor.attach.
type EditorAttach struct {
	Editor  string `json:"editor"`
	Version string `json:"version,omitempty"`
}

// attach makes the connection of ctx an editor's: it is told what happens
// (notifications, in order) until it closes, and then forgotten with all it
// said.
func (e *Editors) attach(ctx context.Context, a EditorAttach) error {
	peer := pipe.PeerOf(ctx)
	if peer == nil {
		return &events.Err{Code: events.CodeInvalidArguments, Msg: "editor.attach is only served on a pipe connection"}
	}
	if a.Editor == "" || len(a.Editor) > 64 {
		return &events.Err{Code: events.CodeInvalidArguments, Msg: "editor.attach needs the editor's name (at most 64 characters), e.g. {\"editor\":\"vscode\"}"}
	}
	e.mu.Lock()
	if _, again := e.conns[peer]; again {
		e.mu.Unlock()
		return nil
	}
	c := &editorConn{peer: peer, name: a.Editor, version: a.Version, queue: make(chan pipe.Notification, 256)}
	e.conns[peer] = c
	e.mu.Unlock()
	e.emit(events.Event{Kind: events.KindEditorAttached, Outcome: events.OK,
		Attrs: events.A("editor", a.Editor, "version", a.Version, "uid", strconv.Itoa(peer.UID), "workspace", e.ws.Dir())})
	go c.send()
	go func() {
		<-peer.Done()
		e.detach(c)
	}()
	return nil
}

// send writes c's notifications in order until its connection ends.
func (c *editorConn) send() {
	for {
		select {
		case n := <-c.queue:
			if err := c.peer.Notify(n.Notify, n.Payload); err != nil {
				slog.Debug("host: an editor notification was not sent", "editor", c.name, "err", err)
			}
		case <-c.peer.Done():
			return
		}
	}
}

func (e *Editors) detach(c *editorConn) {
	e.mu.Lock()
	delete(e.conns, c.peer)
	for p, b := range e.buffers {
		if b.peer == c.peer {
			delete(e.buffers, p)
		}
	}
	if e.focus != nil && e.focus.peer == c.peer {
		e.focus = nil
	}
	if e.last == c {
		e.last = nil
	}
	e.mu.Unlock()
	e.emit(events.Event{Kind: events.KindEditorDetached, Outcome: events.OK, Attrs: events.A("editor", c.name, "workspace", e.ws.Dir())})
}

// Broadcast tells every attached editor; an editor too slow to take 256
// notifications misses the newest (each says what to re-read).
func (e *Editors) Broadcast(name string, payload any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, c := range e.conns {
		select {
		case c.queue <- pipe.Notification{V: pipe.Version, Notify: name, Payload: payload}:
		default:
			slog.Warn("host: an editor is not reading its notifications; dropped one", "editor", c.name, "notification", name)
		}
	}
}

// attached returns the editor of ctx's connection, or a refusal saying to
// attach first.
func (e *Editors) attached(ctx context.Context) (*editorConn, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.conns[pipe.PeerOf(ctx)]; c != nil {
		return c, nil
	}
	return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "this connection is not an editor's: send editor.attach first"}
}

// EditorDocument is a document as an editor describes it (editor.document,
// and editor.focus with a selection). Text is sent when Dirty: the buffer
// differs from the file.
type EditorDocument struct {
	Path      string     `json:"path"`
	Language  string     `json:"language,omitempty"`
	Version   int        `json:"version,omitempty"`
	Dirty     bool       `json:"dirty,omitempty"`
	Text      *string    `json:"text,omitempty"`
	Closed    bool       `json:"closed,omitempty"`
	Selection *Selection `json:"selection,omitempty"`
}

// document records what an editor says of one document: its unsaved text,
// or that it has none. It returns the workspace-relative path.
func (e *Editors) document(c *editorConn, a EditorDocument) (string, error) {
	rel, err := e.ws.Relative(a.Path)
	if err != nil {
		return "", coded(err)
	}
	if a.Dirty && a.Text == nil && !a.Closed {
		return "", &events.Err{Code: events.CodeInvalidArguments, Msg: rel + ": a dirty document carries its text"}
	}
	if a.Dirty && !a.Closed {
		// The same confinement as workspace.file: no buffer is kept (and so
		// no edit applied through it) for a symlink, a hard link or
		// anything but a regular file, nor for what resolves outside.
		if _, err := e.ws.regular(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", coded(err)
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if a.Dirty && !a.Closed {
		if err := e.roomLocked(c, rel, len(*a.Text)); err != nil {
			return "", err
		}
		e.buffers[rel] = Buffer{Path: rel, Version: a.Version, Text: *a.Text, peer: c.peer}
	} else if b, ok := e.buffers[rel]; ok && b.peer == c.peer {
		delete(e.buffers, rel)
	}
	return rel, nil
}

// roomLocked refuses a buffer of n bytes for rel from c that would take
// c's buffers or all past their bounds (rel's own buffer, replaced, does
// not count).
func (e *Editors) roomLocked(c *editorConn, rel string, n int) error {
	mine, all := n, n
	for p, b := range e.buffers {
		if p == rel {
			continue
		}
		all += len(b.Text)
		if b.peer == c.peer {
			mine += len(b.Text)
		}
	}
	switch {
	case mine > e.room.perEditor:
		return &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("%s: this editor's unsaved buffers would hold %d bytes; the host keeps at most %d per editor (save some files)", rel, mine, e.room.perEditor)}
	case all > e.room.all:
		return &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("%s: the editors' unsaved buffers would hold %d bytes; the host keeps at most %d in all (save some files)", rel, all, e.room.all)}
	}
	return nil
}

// setFocus records the editor's focused document and selection; an empty
// path means nothing has focus.
func (e *Editors) setFocus(c *editorConn, a EditorDocument) error {
	if a.Path == "" {
		e.mu.Lock()
		e.focus = nil
		e.mu.Unlock()
		return nil
	}
	rel, err := e.document(c, a)
	if err != nil {
		return err
	}
	if a.Selection != nil && (a.Selection.StartLine < 1 || a.Selection.EndLine < a.Selection.StartLine) {
		return &events.Err{Code: events.CodeInvalidArguments, Msg: "selection: lines are 1-based and end at or after they start"}
	}
	lang := a.Language
	if lang == "" {
		lang = languageOf(rel)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.focus = &editorFocus{Path: rel, Language: lang, Version: a.Version, Selection: a.Selection, peer: c.peer}
	return nil
}

// setDiagnostics replaces what c reported: absolute paths become
// workspace-relative, ones outside the root are left out.
func (e *Editors) setDiagnostics(c *editorConn, diags []Diagnostic) int {
	kept := make([]Diagnostic, 0, len(diags))
	for _, d := range diags {
		rel, err := e.ws.Relative(d.File)
		if err != nil || d.Line < 1 || len(kept) == MaxDiagnostics {
			continue
		}
		d.File = filepath.ToSlash(rel)
		kept = append(kept, d)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	c.diags, c.hasDiags = kept, true
	e.last = c
	return len(kept)
}

// Diagnostics returns what the editor that reported last says, and its
// name; ok is false when no attached editor reported any.
func (e *Editors) Diagnostics() (diags []Diagnostic, editor string, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.last == nil || !e.last.hasDiags {
		return nil, "", false
	}
	return append([]Diagnostic{}, e.last.diags...), e.last.name, true
}

// Focus returns the focused document as an editor said it, with its
// unsaved text when it has some.
func (e *Editors) Focus() (f editorFocus, buf *Buffer, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.focus == nil {
		return editorFocus{}, nil, false
	}
	if b, held := e.buffers[e.focus.Path]; held {
		buf = &b
	}
	return *e.focus, buf, true
}

// Buffer returns the unsaved text an editor holds for a workspace-relative
// path.
func (e *Editors) Buffer(rel string) (Buffer, bool) {
	if e == nil {
		return Buffer{}, false
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	b, ok := e.buffers[rel]
	return b, ok
}

// EditorApplyEdit is the payload of editor.apply_edit (host → editor).
type EditorApplyEdit struct {
	Path     string `json:"path"` // absolute, as the editor knows it
	Version  int    `json:"version"`
	Text     string `json:"text"`
	Proposal string `json:"proposal"`
}

// ApplyToBuffer asks the editor holding b to replace its text with text, as
// one undoable edit, if its document is still at b.Version; it refuses with
// Drift otherwise. The crossing is recorded under requestID.
func (e *Editors) ApplyToBuffer(ctx context.Context, requestID, proposal string, b Buffer, text []byte) error {
	req := pipe.Request{Command: pipe.CmdEditorApplyEdit, RequestID: requestID, OperationID: events.NewID().String()}
	req.Payload, _ = json.Marshal(EditorApplyEdit{Path: filepath.Join(e.ws.Dir(), filepath.FromSlash(b.Path)), Version: b.Version, Text: string(text), Proposal: proposal})
	rid, _ := events.ParseID(requestID)
	op, _ := events.ParseID(req.OperationID)
	attrs := events.A(events.AttrCommand, req.Command, "path", b.Path, "version", strconv.Itoa(b.Version), events.AttrProposal, proposal)
	t0 := time.Now()
	e.emit(events.Event{Kind: events.KindEditorRequestSent, RequestID: rid, OperationID: op, Outcome: events.OK, Attrs: attrs})
	resp, err := b.peer.Call(ctx, req, EditorCallTimeout)
	if err == nil && !resp.OK {
		err = &events.Err{Code: resp.Code, Msg: "the editor refused the edit to " + b.Path + ": " + resp.Message}
	}
	var code events.Code
	if err != nil {
		code = events.AsErr(err, events.CodeToolError).Code
		attrs = attrs.With(events.AttrError, err.Error())
	}
	e.emit(events.Event{Kind: events.KindEditorResponseReceived, RequestID: rid, OperationID: op, Outcome: events.OutcomeOf(code), Code: code, Attrs: attrs}.Took(t0, time.Now()))
	if err != nil {
		return events.AsErr(err, events.CodeToolError)
	}
	var answer struct {
		Version int `json:"version"`
	}
	json.Unmarshal(resp.Payload, &answer)
	e.mu.Lock()
	defer e.mu.Unlock()
	if cur, ok := e.buffers[b.Path]; ok && cur.peer == b.peer {
		cur.Text, cur.Version = string(text), max(answer.Version, cur.Version)
		e.buffers[b.Path] = cur
	}
	return nil
}
