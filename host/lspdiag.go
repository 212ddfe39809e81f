package host

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host/lsp"
)

// MaxDiagnosedFiles bounds how many files a workspace-wide get_diagnostics
// opens in the language servers.
const MaxDiagnosedFiles = 200

// diagnosticsWait bounds how long get_diagnostics waits for the servers to
// publish for the files it opened; diagnosticsQuiet is how long a server
// must publish nothing more before its last word is taken.
const (
	diagnosticsWait  = 5 * time.Second
	diagnosticsQuiet = 500 * time.Millisecond
)

var severities = []string{"", "error", "warning", "info", "hint"}

// languageDiagnostics asks the workspace's language servers for what they
// find wrong in rel (every file of their languages when rel is "", at most
// MaxDiagnosedFiles): each file is opened with the text the user sees and
// the server's next publication for it is taken.
func (h *Host) languageDiagnostics(ctx context.Context, req events.ID, rel string) (*DiagnosticsResult, error) {
	files := []string{rel}
	truncated := false
	if rel == "" {
		servers := h.Languages().present()
		if len(servers) == 0 {
			return nil, &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: h.Languages().unknown()}
		}
		tree, err := h.WS.Tree()
		if err != nil {
			return nil, coded(err)
		}
		files = nil
		for _, f := range tree.Files {
			srv, _, err := h.Languages().forPath(f)
			if err == nil && slices.Contains(servers, srv) {
				if len(files) == MaxDiagnosedFiles {
					truncated = true
					break
				}
				files = append(files, f)
			}
		}
	}
	type opened struct {
		srv       *lsp.Server
		rel, text string // the text the server was given, read once
	}
	var open []opened
	var firstErr error
	for _, f := range files {
		srv, langID, err := h.Languages().forPath(f)
		var text string
		if err == nil {
			if text, err = h.text(f); err == nil {
				err = srv.Open(ctx, req, filepath.Join(h.WS.Dir(), filepath.FromSlash(f)), langID, text)
			}
		}
		if err != nil {
			if firstErr == nil {
				firstErr = coded(err)
			}
			continue
		}
		open = append(open, opened{srv, f, text})
	}
	if len(open) == 0 {
		if firstErr == nil {
			firstErr = &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: "no file of the workspace has a language server"}
		}
		return nil, firstErr
	}
	res := &DiagnosticsResult{Diagnostics: []Diagnostic{}, RanAt: time.Now().UTC()}
	deadline := time.Now().Add(diagnosticsWait)
	// Every file's first publication, then a quiet moment per server: the
	// last word on each file is taken, not the first of a burst.
	for _, o := range open {
		o.srv.Diagnostics(filepath.Join(h.WS.Dir(), filepath.FromSlash(o.rel)), time.Until(deadline))
	}
	for _, o := range open {
		if !slices.Contains(res.Servers, o.srv.Language()) {
			res.Servers = append(res.Servers, o.srv.Language())
			o.srv.Settle(diagnosticsQuiet, deadline)
		}
	}
	for _, o := range open {
		raw, ok := o.srv.Diagnostics(filepath.Join(h.WS.Dir(), filepath.FromSlash(o.rel)), 0)
		if !ok {
			res.Unanswered = append(res.Unanswered, o.rel)
			continue
		}
		res.Diagnostics = append(res.Diagnostics, lspDiagnostics(o.srv, o.rel, o.text, raw)...)
	}
	if truncated {
		res.Note = fmt.Sprintf("only the first %d files of the workspace were diagnosed; name a path for another", MaxDiagnosedFiles)
	}
	return res, nil
}

// lspDiagnostics converts a publishDiagnostics notification to 1-based
// diagnostics of rel.
func lspDiagnostics(srv *lsp.Server, rel, text string, raw json.RawMessage) []Diagnostic {
	var p struct {
		Diagnostics []struct {
			Range    lspRange        `json:"range"`
			Severity int             `json:"severity"`
			Code     json.RawMessage `json:"code"`
			Source   string          `json:"source"`
			Message  string          `json:"message"`
		} `json:"diagnostics"`
	}
	json.Unmarshal(raw, &p)
	lines := strings.Split(text, "\n")
	var out []Diagnostic
	for _, d := range p.Diagnostics {
		sev := "error"
		if d.Severity > 0 && d.Severity < len(severities) {
			sev = severities[d.Severity]
		}
		code := ""
		if len(d.Code) > 0 {
			var s string
			if json.Unmarshal(d.Code, &s) != nil {
				s = string(d.Code) // a number
			}
			code = s
		}
		out = append(out, Diagnostic{File: path.Clean(rel), Line: d.Range.Start.Line + 1, Column: fromLSP(lines, d.Range.Start.Line, d.Range.Start.Character, srv.UTF8()),
			EndLine: d.Range.End.Line + 1, EndColumn: fromLSP(lines, d.Range.End.Line, d.Range.End.Character, srv.UTF8()),
			Severity: sev, Source: d.Source, Code: code, Message: d.Message})
	}
	return out
}
