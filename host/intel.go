package host

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host/lsp"
	"github.com/tracebridge/tracebridge/pipe"
)

// The host's language intelligence (host/lsp): definitions,
// references, hover, symbols, answered by the workspace's language servers.
// Lines and columns are 1-based everywhere, columns in bytes as compilers
// print them; the LSP's 0-based, UTF-16 positions never leave the host.

// Location is a place a language server answered with.
type Location struct {
	Path      string `json:"path"`
	Line      int    `json:"line"`
	Column    int    `json:"column"`
	EndLine   int    `json:"endLine"`
	EndColumn int    `json:"endColumn"`
	Ref       string `json:"ref"` // [path:line][], for a review
	Text      string `json:"text,omitempty"`
}

// Symbol is a named thing a language server knows.
type Symbol struct {
	Name      string `json:"name"`
	Kind      string `json:"kind"`
	Container string `json:"container,omitempty"`
	Location
}

type lspPosition struct {
	Line      int `json:"line"`
	Character int `json:"character"`
}

type lspRange struct {
	Start lspPosition `json:"start"`
	End   lspPosition `json:"end"`
}

type lspLocation struct {
	URI   string   `json:"uri"`
	Range lspRange `json:"range"`
	// LocationLink's fields (definition may answer with links).
	TargetURI   string   `json:"targetUri"`
	TargetRange lspRange `json:"targetSelectionRange"`
}

// docAt opens path in its language's server (as the user sees it: an
// editor's unsaved text wins) and returns the server, the document's text
// and the LSP position of line:column.
func (h *Host) docAt(ctx context.Context, req events.ID, a pipe.PositionArgs) (*lsp.Server, map[string]any, error) {
	rel, err := h.WS.Relative(a.Path)
	if err != nil {
		return nil, nil, coded(err)
	}
	srv, langID, err := h.Languages().forPath(rel)
	if err != nil {
		return nil, nil, err
	}
	text, err := h.text(rel)
	if err != nil {
		return nil, nil, coded(err)
	}
	abs := filepath.Join(h.WS.Dir(), filepath.FromSlash(rel))
	if err := srv.Open(ctx, req, abs, langID, text); err != nil {
		return nil, nil, err
	}
	srv.Ready(ctx)
	params := map[string]any{"textDocument": map[string]string{"uri": lsp.URI(abs)}}
	if a.Line > 0 {
		ch, err := toLSP(text, a.Line, max(a.Column, 1), srv.UTF8())
		if err != nil {
			return nil, nil, &events.Err{Code: events.CodeInvalidArguments, Msg: rel + ": " + err.Error()}
		}
		params["position"] = lspPosition{Line: a.Line - 1, Character: ch}
	}
	return srv, params, nil
}

// text is a workspace file as the user sees it.
func (h *Host) text(rel string) (string, error) {
	if b, ok := h.Editors().Buffer(rel); ok {
		return b.Text, nil
	}
	b, err := h.WS.ReadFile(rel)
	return string(b), err
}

// toLSP is the LSP character offset of 1-based byte column col on 1-based
// line of text.
func toLSP(text string, line, col int, utf8Positions bool) (int, error) {
	lines := strings.Split(text, "\n")
	if line < 1 || line > len(lines) {
		return 0, fmt.Errorf("line %d is outside the file (%d lines)", line, len(lines))
	}
	l := strings.TrimSuffix(lines[line-1], "\r")
	if col > len(l)+1 {
		return 0, fmt.Errorf("column %d is past the end of line %d (%d bytes)", col, line, len(l))
	}
	if utf8Positions {
		return col - 1, nil
	}
	n := 0
	for _, r := range l[:col-1] {
		n += utf16Len(r)
	}
	return n, nil
}

func utf16Len(r rune) int {
	if r >= 0x10000 {
		return 2
	}
	return 1
}

// fromLSP is the 1-based byte column of an LSP character offset on line
// (0-based) of a text's lines.
func fromLSP(lines []string, line, ch int, utf8Positions bool) int {
	if line < 0 || line >= len(lines) {
		return ch + 1
	}
	l := lines[line]
	if utf8Positions {
		return min(ch, len(l)) + 1
	}
	n := 0
	for i, r := range l {
		if n >= ch {
			return i + 1
		}
		n += utf16Len(r)
	}
	return len(l) + 1
}

// locations turns LSP locations into workspace-relative, 1-based ones;
// locations outside the root (the standard library, module caches) keep
// their absolute path.
func (h *Host) locations(srv *lsp.Server, raw []lspLocation) []Location {
	out := make([]Location, 0, len(raw))
	type file struct {
		path    string   // workspace-relative, else absolute
		lines   []string // its text as the user sees it, split once per answer
		refused bool     // in the root, but not a file workspace.file serves
	}
	files := map[string]*file{} // by URI: a file is resolved and read once
	for _, l := range raw {
		u, r := l.URI, l.Range
		if u == "" {
			u, r = l.TargetURI, l.TargetRange
		}
		f := files[u]
		if f != nil && f.refused {
			continue
		}
		if f == nil {
			abs := lsp.PathOf(u)
			if abs == "" {
				continue
			}
			f = &file{path: abs}
			if rel, err := h.relative(abs); err == nil {
				if h.unconfined(rel) != nil {
					// A workspace symlink (or hard link…) to a file the
					// server read outside the root: not shown, as
					// workspace.file would not show it.
					files[u] = &file{refused: true}
					continue
				}
				f.path = rel
			}
			if b, ok := h.Editors().Buffer(f.path); ok {
				f.lines = strings.Split(b.Text, "\n")
			} else {
				f.lines = h.lines.get(h.WS, f.path)
			}
			files[u] = f
		}
		lines := f.lines
		loc := Location{Path: f.path, Line: r.Start.Line + 1, Column: fromLSP(lines, r.Start.Line, r.Start.Character, srv.UTF8()),
			EndLine: r.End.Line + 1, EndColumn: fromLSP(lines, r.End.Line, r.End.Character, srv.UTF8())}
		loc.Ref = fmt.Sprintf("[%s:%d][]", loc.Path, loc.Line)
		if r.Start.Line < len(lines) {
			loc.Text = strings.TrimSpace(lines[r.Start.Line])
			if len(loc.Text) > 200 {
				loc.Text = loc.Text[:200] + "…"
			}
		}
		out = append(out, loc)
	}
	return out
}

// unconfined says why a workspace path is not a file workspace.file would
// serve (a symlink, a hard link, not regular, outside once resolved), or
// nil; a path with nothing there is not refused.
func (h *Host) unconfined(rel string) error {
	if _, err := h.WS.regular(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// relative is the workspace path of an absolute one a language server
// named: under the root as the host was given it, by its prefix (reads go
// through the root's confinement whatever it says), else resolved.
func (h *Host) relative(abs string) (string, error) {
	if rest, ok := strings.CutPrefix(abs, h.WS.Dir()+string(filepath.Separator)); ok && filepath.IsLocal(rest) {
		return Clean(filepath.ToSlash(rest))
	}
	return h.WS.Relative(abs)
}

func (h *Host) positionCall(method string, extra map[string]any) pipe.Handler {
	return func(ctx context.Context, req pipe.Request) (any, error) {
		var a pipe.PositionArgs
		if err := decode(req, &a); err != nil {
			return nil, err
		}
		if a.Line < 1 {
			return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "line is 1-based and required"}
		}
		rid, _ := events.ParseID(req.RequestID)
		srv, params, err := h.docAt(ctx, rid, a)
		if err != nil {
			return nil, err
		}
		for k, v := range extra {
			params[k] = v
		}
		if method == "textDocument/references" { // reads the whole workspace, as workspace/symbol does
			h.Languages().tellChanges(srv, rid)
		}
		var raw json.RawMessage
		if err := srv.Call(ctx, rid, method, params, &raw); err != nil {
			return nil, err
		}
		var many []lspLocation
		if len(raw) > 0 && raw[0] == '{' {
			var one lspLocation
			json.Unmarshal(raw, &one)
			many = []lspLocation{one}
		} else {
			json.Unmarshal(raw, &many)
		}
		locs := h.locations(srv, many)
		return map[string]any{"language": srv.Language(), "locations": locs, "count": len(locs)}, nil
	}
}

func (h *Host) hover(ctx context.Context, req pipe.Request) (any, error) {
	var a pipe.PositionArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	rid, _ := events.ParseID(req.RequestID)
	srv, params, err := h.docAt(ctx, rid, a)
	if err != nil {
		return nil, err
	}
	// A hover quotes the declaration: one the server read through a
	// workspace symlink from outside the root is refused, as
	// workspace.file refuses the symlink.
	var defs json.RawMessage
	err = srv.Call(ctx, rid, "textDocument/definition", params, &defs)
	if err != nil && !lsp.IsRefusal(err) {
		return nil, err // the server crashed, hung or broke the protocol: this request's answer
	}
	if err == nil {
		var many []lspLocation
		if len(defs) > 0 && defs[0] == '{' {
			var one lspLocation
			json.Unmarshal(defs, &one)
			many = []lspLocation{one}
		} else {
			json.Unmarshal(defs, &many)
		}
		for _, l := range many {
			u := cmp.Or(l.URI, l.TargetURI)
			if rel, err := h.relative(lsp.PathOf(u)); err == nil {
				if err := h.unconfined(rel); err != nil {
					return nil, coded(err)
				}
			}
		}
	}
	var res struct {
		Contents json.RawMessage `json:"contents"`
	}
	if err := srv.Call(ctx, rid, "textDocument/hover", params, &res); err != nil {
		return nil, err
	}
	return map[string]any{"language": srv.Language(), "text": hoverText(res.Contents)}, nil
}

// hoverText flattens the three shapes of hover contents.
func hoverText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var mc struct {
		Value string `json:"value"`
	}
	if json.Unmarshal(raw, &mc) == nil && mc.Value != "" {
		return mc.Value
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		var parts []string
		for _, p := range list {
			parts = append(parts, hoverText(p))
		}
		return strings.Join(parts, "\n\n")
	}
	return ""
}

var symbolKinds = []string{"", "file", "module", "namespace", "package", "class", "method", "property", "field", "constructor", "enum",
	"interface", "function", "variable", "constant", "string", "number", "boolean", "array", "object", "key", "null", "enum member",
	"struct", "event", "operator", "type parameter"}

func kindName(k int) string {
	if k > 0 && k < len(symbolKinds) {
		return symbolKinds[k]
	}
	return "symbol"
}

type lspSymbol struct {
	Name           string      `json:"name"`
	Kind           int         `json:"kind"`
	ContainerName  string      `json:"containerName"`
	Location       lspLocation `json:"location"`       // SymbolInformation
	SelectionRange lspRange    `json:"selectionRange"` // DocumentSymbol
	Range          lspRange    `json:"range"`
	Children       []lspSymbol `json:"children"`
}

func (h *Host) documentSymbols(ctx context.Context, req pipe.Request) (any, error) {
	var a pipe.PositionArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	a.Line = 0
	rid, _ := events.ParseID(req.RequestID)
	srv, params, err := h.docAt(ctx, rid, a)
	if err != nil {
		return nil, err
	}
	var raw []lspSymbol
	if err := srv.Call(ctx, rid, "textDocument/documentSymbol", params, &raw); err != nil {
		return nil, err
	}
	rel, _ := h.WS.Relative(a.Path)
	uri := lsp.URI(filepath.Join(h.WS.Dir(), filepath.FromSlash(rel)))
	var out []Symbol
	var walk func([]lspSymbol, string)
	walk = func(list []lspSymbol, container string) {
		for _, s := range list {
			loc := s.Location
			if loc.URI == "" { // a DocumentSymbol: its own file, its name's range
				loc = lspLocation{URI: uri, Range: s.SelectionRange}
			}
			if s.ContainerName != "" {
				container = s.ContainerName
			}
			if l := h.locations(srv, []lspLocation{loc}); len(l) == 1 {
				out = append(out, Symbol{Name: s.Name, Kind: kindName(s.Kind), Container: container, Location: l[0]})
			}
			walk(s.Children, s.Name)
		}
	}
	walk(raw, "")
	return map[string]any{"language": srv.Language(), "path": rel, "symbols": orEmpty(out)}, nil
}

func (h *Host) findSymbol(ctx context.Context, req pipe.Request) (any, error) {
	var a pipe.SymbolArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	if strings.TrimSpace(a.Query) == "" {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "query is required: a symbol's name or part of it"}
	}
	if a.Limit <= 0 {
		a.Limit = 100
	}
	rid, _ := events.ParseID(req.RequestID)
	out, err := h.symbols(ctx, rid, a.Query, a.Language)
	if err != nil {
		return nil, err
	}
	total := len(out)
	if len(out) > a.Limit {
		out = out[:a.Limit]
	}
	return map[string]any{"symbols": orEmpty(out), "count": total, "truncated": total > len(out)}, nil
}

// symbols asks the language servers of the workspace (or of language)
// for the symbols matching query.
func (h *Host) symbols(ctx context.Context, rid events.ID, query, language string) ([]Symbol, error) {
	servers := h.Languages().present()
	if language != "" {
		srv, err := h.Languages().byName(language)
		if err != nil {
			return nil, err
		}
		servers = []*lsp.Server{srv}
	}
	if len(servers) == 0 {
		return nil, &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: h.Languages().unknown() + ": name a language"}
	}
	var out []Symbol
	var firstErr error
	answered := 0
	for _, srv := range servers {
		srv.Ready(ctx)
		h.Languages().tellChanges(srv, rid)
		var raw []lspSymbol
		if err := srv.Call(ctx, rid, "workspace/symbol", map[string]string{"query": query}, &raw); err != nil {
			firstErr = cmpErr(firstErr, err)
			continue
		}
		answered++
		for _, s := range raw {
			if l := h.locations(srv, []lspLocation{s.Location}); len(l) == 1 {
				out = append(out, Symbol{Name: s.Name, Kind: kindName(s.Kind), Container: s.ContainerName, Location: l[0]})
			}
		}
	}
	if answered == 0 && firstErr != nil { // none answered; one that found nothing is an answer
		return nil, firstErr
	}
	return out, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
