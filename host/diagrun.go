package host

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// DiagnosticsRunner runs the operator's diagnostics command in the root and
// keeps its last result for Refresh.
type DiagnosticsRunner struct {
	Command []string      // e.g. go vet ./... ; no shell
	Refresh time.Duration // a result younger than this is reused. Zero: 30s.
	Timeout time.Duration // Zero: 2m.

	mu   sync.Mutex
	last *DiagnosticsResult
}

// DiagnosticsResult is what get_diagnostics returns.
type DiagnosticsResult struct {
	Diagnostics []Diagnostic `json:"diagnostics"`
	Command     string       `json:"command,omitempty"`
	Editor      string       `json:"editor,omitempty"`  // the attached editor that reported them
	Servers     []string     `json:"servers,omitempty"` // the language servers that did
	// Unanswered lists the files a language server did not publish for in
	// time; Note says what else to know.
	Unanswered []string  `json:"unanswered,omitempty"`
	Note       string    `json:"note,omitempty"`
	RanAt      time.Time `json:"ranAt"`
	ExitCode   int       `json:"exitCode"`
	FromCache  bool      `json:"fromCache"`
}

func (h *Host) diagnostics(ctx context.Context, req pipe.Request) (any, error) {
	var a pipe.DiagnosticsArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	rel := ""
	if a.Path != "" {
		var err error
		if rel, err = h.WS.Relative(a.Path); err != nil {
			return nil, coded(err)
		}
	}
	// An attached editor's own language services win; then the command the
	// operator chose; then the workspace's language servers.
	if diags, editor, ok := h.Editors().Diagnostics(); ok {
		return DiagnosticsResult{Diagnostics: onlyFile(diags, rel), Editor: editor, RanAt: time.Now().UTC()}, nil
	}
	d := h.Diagnostics
	if d == nil || len(d.Command) == 0 {
		rid, _ := events.ParseID(req.RequestID)
		res, err := h.languageDiagnostics(ctx, rid, rel)
		if err != nil && events.AsErr(err, "").Code == events.CodeLanguageServerUnavailable {
			return nil, &events.Err{Code: events.CodeToolError, Msg: "no diagnostics: " + events.AsErr(err, "").Msg + "; attach an editor to this workspace (editors/vscode, editors/nvim), install its language server, or start the host with --diagnostics \"go vet ./...\" (or your linter)"}
		}
		return res, err
	}
	refresh, timeout := d.Refresh, d.Timeout
	if refresh <= 0 {
		refresh = 30 * time.Second
	}
	if timeout <= 0 {
		timeout = 2 * time.Minute
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != nil && !a.Refresh && time.Since(d.last.RanAt) < refresh {
		cached := *d.last
		cached.FromCache = true
		return cached, nil
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(rctx, d.Command[0], d.Command[1:]...)
	cmd.Dir = h.WS.Dir()
	var out limitedOut
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	res := &DiagnosticsResult{Command: strings.Join(d.Command, " "), RanAt: time.Now().UTC(), Diagnostics: parseDiagnostics(out.String())}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode() // linters exit non-zero when they find something
	case rctx.Err() != nil:
		return nil, &events.Err{Code: events.CodeToolTimeout, Msg: "the diagnostics command ran past " + timeout.String()}
	case err != nil:
		return nil, &events.Err{Code: events.CodeToolError, Msg: "diagnostics command: " + err.Error()}
	}
	for i := range res.Diagnostics {
		res.Diagnostics[i].File = strings.TrimPrefix(res.Diagnostics[i].File, "./")
	}
	d.last = res
	return res, nil
}

// limitedOut keeps the first 4 MiB of a command's output.
type limitedOut struct{ bytes.Buffer }

func (l *limitedOut) Write(p []byte) (int, error) {
	if room := 4<<20 - l.Len(); room > 0 {
		l.Buffer.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// onlyFile keeps the diagnostics of rel ("": all).
func onlyFile(diags []Diagnostic, rel string) []Diagnostic {
	if rel == "" {
		return diags
	}
	out := []Diagnostic{}
	for _, d := range diags {
		if d.File == rel {
			out = append(out, d)
		}
	}
	return out
}
