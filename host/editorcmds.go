package host

import (
	"context"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// The editor's commands (docs/pipe-protocol.md, "Editors").

// Attached is the answer to editor.attach: the workspace the host serves
// and what is pending there now (later changes arrive as notifications).
type Attached struct {
	Protocol  int         `json:"protocol"`
	Root      string      `json:"root"`
	Proposals []*Proposal `json:"proposals"` // pending, as lists carry them
	Review    int         `json:"review"`    // the latest review version; 0: none
}

func (h *Host) editorAttach(ctx context.Context, req pipe.Request) (any, error) {
	var a EditorAttach
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	if err := h.Editors().attach(ctx, a); err != nil {
		return nil, err
	}
	out := Attached{Protocol: pipe.Version, Root: h.WS.Dir(), Proposals: []*Proposal{}}
	for _, pr := range h.Proposals.List() {
		if pr.State == Pending {
			out.Proposals = append(out.Proposals, summary(pr))
		}
	}
	out.Review = h.Reviews.Latest()
	return out, nil
}

// fromEditor returns the attached editor a request came from, with its
// payload decoded into a.
func (h *Host) fromEditor(ctx context.Context, req pipe.Request, a any) (*editorConn, error) {
	c, err := h.Editors().attached(ctx)
	if err != nil {
		return nil, err
	}
	return c, decode(req, a)
}

func (h *Host) editorFocus(ctx context.Context, req pipe.Request) (any, error) {
	var a EditorDocument
	c, err := h.fromEditor(ctx, req, &a)
	if err != nil {
		return nil, err
	}
	if err := h.Editors().setFocus(c, a); err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.focus = nil // the editor's focus wins until the operator sets one
	h.mu.Unlock()
	return map[string]bool{"ok": true}, nil
}

func (h *Host) editorDocument(ctx context.Context, req pipe.Request) (any, error) {
	var a EditorDocument
	c, err := h.fromEditor(ctx, req, &a)
	if err != nil {
		return nil, err
	}
	if a.Selection != nil {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "editor.document carries no selection: send it with editor.focus"}
	}
	rel, err := h.Editors().document(c, a)
	if err != nil {
		return nil, err
	}
	_, held := h.Editors().Buffer(rel)
	return map[string]any{"path": rel, "unsaved": held}, nil
}

// EditorDiagnostics is the payload of editor.diagnostics: every diagnostic the
// editor knows now (it replaces what the editor sent before).
type EditorDiagnostics struct {
	Diagnostics []Diagnostic `json:"diagnostics"`
}

func (h *Host) editorDiagnostics(ctx context.Context, req pipe.Request) (any, error) {
	var a EditorDiagnostics
	c, err := h.fromEditor(ctx, req, &a)
	if err != nil {
		return nil, err
	}
	return map[string]int{"kept": h.Editors().setDiagnostics(c, a.Diagnostics)}, nil
}
