package lsp

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/proc"
)

// Config is one language's server for one workspace root.
type Config struct {
	Language string   // e.g. "go": events and messages name it
	Command  []string // e.g. ["gopls"]; run in Root, no shell
	Root     string
	// Timeout bounds one request; zero: 10s. The first request after a
	// start also waits for initialize (at most a minute: a large module).
	Timeout time.Duration
	// Env is the server's whole environment; nil: this process's.
	Env []string
	// InitOptions are sent as initialize's initializationOptions (nil:
	// none): how the host pins what a server may run.
	InitOptions map[string]any
	// Refused, when set, is the answer to every request: the server must
	// not start (it would run code the workspace supplies).
	Refused error
}

// Server is a language server process, started on the first request,
// restarted with backoff after it crashes, hangs or sends garbage, and
// stopped by Close. Every request and answer is recorded (lsp.request.sent,
// lsp.response.received) under the request id of the tool call that caused
// it.
type Server struct {
	cfg Config
	rec events.Recorder

	mu       sync.Mutex
	cmd      *exec.Cmd
	c        *conn
	utf8     bool                // positions count bytes (negotiated), else UTF-16 units
	opened   map[string]document // by URI: what the server was told
	diags    map[string]json.RawMessage
	diagSeen chan struct{} // closed and replaced on every publishDiagnostics
	// Work the server reports in progress ($/progress), by token: a
	// project loading. progressed is closed and replaced on every report;
	// firstOpen is when the first document was opened since the start, and
	// heard whether the server has since begun work or published
	// diagnostics (it has taken the document in).
	progress   map[string]time.Time
	progressed chan struct{}
	firstOpen  time.Time
	heard      bool
	failures   int
	retryAt    time.Time
	stderr     *tail
	closed     bool
	starts     int       // processes started: which one a caller's view of the disk is for
	startedAt  time.Time // when the running one started
}

// refused is how the error of a request the server answered with an error
// reads (IsRefusal): it is alive, it declined.
const refused = "refused"

// IsRefusal says whether err is the server declining one request (an
// error response), not the server failing (a crash, a hang, garbage).
func IsRefusal(err error) bool {
	return err != nil && strings.Contains(err.Error(), " language server "+refused+" ")
}

// NewServer returns a server that starts on its first request.
func NewServer(cfg Config, rec events.Recorder) *Server {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Server{cfg: cfg, rec: rec, opened: map[string]document{}, diags: map[string]json.RawMessage{}, diagSeen: make(chan struct{}),
		progress: map[string]time.Time{}, progressed: make(chan struct{})}
}

// Language returns the language the server serves.
func (s *Server) Language() string { return s.cfg.Language }

// UTF8 reports whether the server counts columns in bytes (else in UTF-16
// code units), once started.
func (s *Server) UTF8() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.utf8
}

func (s *Server) emit(kind string, req events.ID, op events.ID, code events.Code, since time.Time, kv ...string) {
	if s.rec == nil {
		return
	}
	e := events.Event{Kind: kind, RequestID: req, OperationID: op, Outcome: events.OutcomeOf(code), Code: code,
		Attrs: events.A(append([]string{"language", s.cfg.Language}, kv...)...)}
	if !since.IsZero() {
		e = e.Took(since, time.Now())
	}
	s.rec.Emit(e)
}

// unavailable is the error of a server that cannot be started now.
func (s *Server) unavailable(msg string) error {
	return &events.Err{Code: events.CodeLanguageServerUnavailable, Msg: msg}
}

// ensure starts the server unless it runs; it returns the connection.
func (s *Server) ensure(ctx context.Context, req events.ID) (*conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, s.unavailable("the workspace host is stopping")
	}
	if s.c != nil {
		select {
		case <-s.c.done:
			s.c = nil // it died: start again, within the backoff
		default:
			return s.c, nil
		}
	}
	if wait := time.Until(s.retryAt); wait > 0 {
		return nil, s.unavailable(fmt.Sprintf("the %s language server failed %d time(s) (%s); it is started again in %v", s.cfg.Language, s.failures, s.stderr.String(), wait.Round(100*time.Millisecond)))
	}
	if len(s.cfg.Command) == 0 {
		return nil, s.unavailable("no language server is configured for " + s.cfg.Language)
	}
	if s.cfg.Refused != nil {
		return nil, s.cfg.Refused
	}
	bin, err := exec.LookPath(s.cfg.Command[0])
	if err != nil {
		return nil, s.unavailable(fmt.Sprintf("%s is not installed (not on PATH); install it, or name another command in [lsp.%s] command of tracebridge.toml", s.cfg.Command[0], s.cfg.Language))
	}
	cmd := exec.Command(bin, s.cfg.Command[1:]...)
	cmd.Dir = s.cfg.Root
	cmd.Env = s.cfg.Env
	proc.OwnGroup(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s.stderr = &tail{}
	cmd.Stderr = s.stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return nil, s.failedLocked(fmt.Sprintf("%s did not start: %v", s.cfg.Command[0], err))
	}
	c := newConn(stdin)
	c.onNotify = s.notified
	c.onRequest = func(string, json.RawMessage) any { return nil } // configuration, progress, registrations: defaults
	go c.read(stdout)
	go func() {
		err := cmd.Wait() // after its stderr is all in s.stderr
		close(c.exited)
		<-c.done
		s.exited(cmd, err)
	}()
	s.cmd, s.c, s.opened = cmd, c, map[string]document{}
	s.starts, s.startedAt = s.starts+1, t0
	s.progress, s.firstOpen, s.heard = map[string]time.Time{}, time.Time{}, false
	s.emit(events.KindLSPStarted, req, events.ID{}, "", time.Time{}, "command", strings.Join(s.cfg.Command, " "), "root", s.cfg.Root)

	ictx, cancel := context.WithTimeout(ctx, max(time.Minute, s.cfg.Timeout))
	defer cancel()
	root := URI(s.cfg.Root)
	params := map[string]any{
		"processId": os.Getpid(), "rootUri": root, "rootPath": s.cfg.Root,
		"workspaceFolders": []any{map[string]string{"uri": root, "name": filepath.Base(s.cfg.Root)}},
		"capabilities": map[string]any{
			"window":  map[string]any{"workDoneProgress": true}, // so a project load is reported
			"general": map[string]any{"positionEncodings": []string{"utf-8", "utf-16"}},
			"textDocument": map[string]any{
				"hover":              map[string]any{"contentFormat": []string{"plaintext", "markdown"}},
				"documentSymbol":     map[string]any{"hierarchicalDocumentSymbolSupport": true},
				"publishDiagnostics": map[string]any{},
				"definition":         map[string]any{}, "references": map[string]any{},
			},
			"workspace": map[string]any{"symbol": map[string]any{}, "workspaceFolders": true, "configuration": true,
				"didChangeWatchedFiles": map[string]any{"dynamicRegistration": false}}, // the host says what changed on disk
		},
	}
	if s.cfg.InitOptions != nil {
		params["initializationOptions"] = s.cfg.InitOptions
	}
	init, err := c.call(ictx, "initialize", params)
	if err != nil {
		s.killLocked()
		return nil, s.failedLocked(fmt.Sprintf("%s did not initialize: %v", s.cfg.Command[0], errOf(err, s.stderr)))
	}
	var caps struct {
		Capabilities struct {
			PositionEncoding string `json:"positionEncoding"`
		} `json:"capabilities"`
	}
	json.Unmarshal(init, &caps)
	s.utf8 = caps.Capabilities.PositionEncoding == "utf-8"
	c.notify("initialized", map[string]any{})
	s.failures = 0
	s.emit(events.KindLSPResponse, req, events.ID{}, "", t0, "method", "initialize", "positionEncoding", caps.Capabilities.PositionEncoding)
	return c, nil
}

// backoffLocked counts a failure and sets when the next start may be
// tried: 0.5 s, 1 s, 2 s … at most 16 s.
func (s *Server) backoffLocked() {
	s.failures++
	s.retryAt = time.Now().Add(time.Duration(1<<min(s.failures, 6)) * 250 * time.Millisecond)
}

// failedLocked counts a failure and returns it as LanguageServerFailed.
func (s *Server) failedLocked(msg string) error {
	s.backoffLocked()
	return &events.Err{Code: events.CodeLanguageServerFailed, Msg: msg}
}

// killLocked stops the running server; its exit is not counted again.
func (s *Server) killLocked() {
	if s.cmd != nil && s.cmd.Process != nil {
		proc.KillGroup(s.cmd.Process.Pid)
	}
	s.c, s.cmd = nil, nil
}

func (s *Server) exited(cmd *exec.Cmd, err error) {
	s.mu.Lock()
	if s.cmd == cmd { // not stopped by us: it crashed
		s.c, s.cmd = nil, nil
		if !s.closed {
			s.backoffLocked()
		}
	}
	closed := s.closed
	s.mu.Unlock()
	code := events.Code("")
	if !closed {
		code = events.CodeLanguageServerFailed
	}
	exit := "0"
	if err != nil {
		exit = err.Error()
	}
	s.emit(events.KindLSPExited, events.ID{}, events.ID{}, code, time.Time{}, "exit", exit, "stderr", s.stderr.String())
}

func (s *Server) notified(method string, params json.RawMessage) {
	if method == "$/progress" {
		s.progressReported(params)
		return
	}
	if method != "textDocument/publishDiagnostics" {
		return
	}
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	s.diags[p.URI] = params
	s.heard = s.heard || !s.firstOpen.IsZero()
	close(s.diagSeen)
	s.diagSeen = make(chan struct{})
	s.mu.Unlock()
}

// progressReported keeps track of the work a $/progress report begins or
// ends.
func (s *Server) progressReported(params json.RawMessage) {
	var p struct {
		Token json.RawMessage `json:"token"` // a string or a number
		Value struct {
			Kind string `json:"kind"`
		} `json:"value"`
	}
	if json.Unmarshal(params, &p) != nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch p.Value.Kind {
	case "begin":
		s.progress[string(p.Token)] = time.Now()
		s.heard = s.heard || !s.firstOpen.IsZero()
	case "end":
		delete(s.progress, string(p.Token))
	default:
		return
	}
	close(s.progressed)
	s.progressed = make(chan struct{})
}

// loadGrace is how long after the first document opens the server has to
// show it took it in (work begun or diagnostics published; tsserver, cold:
// ~0.5 s) before the first question is asked anyway.
const loadGrace = 5 * time.Second

// Ready waits, at most the request timeout, while the server loads: after
// the first document opened, until the server begins work or publishes
// diagnostics (at most loadGrace), and while it reports work in progress.
// tsserver answers a definition from the one file until its project has
// loaded; gopls sets up its workspace. Work reported longer than the
// timeout ago is not waited for.
func (s *Server) Ready(ctx context.Context) {
	deadline := time.Now().Add(s.cfg.Timeout)
	for {
		s.mu.Lock()
		busy := false
		for _, since := range s.progress {
			busy = busy || time.Since(since) < s.cfg.Timeout
		}
		grace := time.Duration(0)
		if !s.firstOpen.IsZero() && !s.heard {
			grace = time.Until(s.firstOpen.Add(loadGrace))
		}
		changed, published := s.progressed, s.diagSeen
		var died <-chan struct{}
		if s.c != nil {
			died = s.c.done
		}
		s.mu.Unlock()
		wait := time.Until(deadline)
		if !busy {
			wait = min(wait, grace)
		}
		if wait <= 0 {
			return
		}
		select {
		case <-changed:
		case <-published:
		case <-time.After(wait):
		case <-died: // the request will say so
			return
		case <-ctx.Done():
			return
		}
	}
}

// Call sends one request and decodes its result into out (nil: ignored).
func (s *Server) Call(ctx context.Context, req events.ID, method string, params, out any) error {
	c, err := s.ensure(ctx, req)
	if err != nil {
		return err
	}
	op := events.NewID()
	pb, _ := json.Marshal(params)
	s.emit(events.KindLSPRequest, req, op, "", time.Time{}, "method", method, "params", string(pb))
	t0 := time.Now()
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := c.call(cctx, method, json.RawMessage(pb))
	var rpc *RPCError
	switch {
	case err == nil:
		s.emit(events.KindLSPResponse, req, op, "", t0, "method", method, "result", string(res))
		if out != nil && len(res) > 0 && string(res) != "null" {
			if err := json.Unmarshal(res, out); err != nil {
				return &events.Err{Code: events.CodeLanguageServerFailed, Msg: fmt.Sprintf("the %s language server's answer to %s is not what the protocol says: %v", s.cfg.Language, method, err)}
			}
		}
		return nil
	case errors.As(err, &rpc):
		s.emit(events.KindLSPResponse, req, op, events.CodeLanguageServerFailed, t0, "method", method, "error", rpc.Error())
		return &events.Err{Code: events.CodeLanguageServerFailed, Msg: fmt.Sprintf("the %s language server "+refused+" %s: %s", s.cfg.Language, method, rpc.Message)}
	case errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil:
		// A server that hangs is stopped: the next request starts another.
		s.mu.Lock()
		if s.c == c {
			s.killLocked()
			s.backoffLocked()
		}
		s.mu.Unlock()
		s.emit(events.KindLSPResponse, req, op, events.CodeLanguageServerTimeout, t0, "method", method)
		return &events.Err{Code: events.CodeLanguageServerTimeout, Msg: fmt.Sprintf("the %s language server did not answer %s within %v; it was stopped and starts again on the next request", s.cfg.Language, method, s.cfg.Timeout)}
	case ctx.Err() != nil:
		s.emit(events.KindLSPResponse, req, op, events.CodeCancelled, t0, "method", method)
		return ctx.Err()
	default:
		select { // a crash: what it said on the way out is the best clue
		case <-c.exited:
		case <-time.After(time.Second):
		}
		s.emit(events.KindLSPResponse, req, op, events.CodeLanguageServerFailed, t0, "method", method, "error", errOf(err, s.stderr).Error())
		return &events.Err{Code: events.CodeLanguageServerFailed, Msg: fmt.Sprintf("the %s language server failed during %s: %v; it starts again on a later request", s.cfg.Language, method, errOf(err, s.stderr))}
	}
}

// document is an open document as the server knows it.
type document struct {
	version int
	sum     [sha256.Size]byte
}

// Open tells the server the document's text: didOpen, or didChange with the
// whole text when it changed since; nothing when it did not (a change,
// even to the same text, makes a server check the package again).
func (s *Server) Open(ctx context.Context, req events.ID, path, languageID, text string) error {
	c, err := s.ensure(ctx, req)
	if err != nil {
		return err
	}
	u := URI(path)
	sum := sha256.Sum256([]byte(text))
	s.mu.Lock()
	doc, open := s.opened[u]
	if open && doc.sum == sum {
		s.mu.Unlock()
		return nil
	}
	v := doc.version + 1
	if len(s.opened) == 0 {
		s.firstOpen = time.Now()
	}
	s.opened[u] = document{version: v, sum: sum}
	delete(s.diags, u) // Diagnostics waits for the server's word on this text
	s.mu.Unlock()
	method := "textDocument/didOpen"
	params := map[string]any{"textDocument": map[string]any{"uri": u, "languageId": languageID, "version": v, "text": text}}
	if open {
		method = "textDocument/didChange"
		params = map[string]any{"textDocument": map[string]any{"uri": u, "version": v}, "contentChanges": []any{map[string]string{"text": text}}}
	}
	s.emit(events.KindLSPNotified, req, events.ID{}, "", time.Time{}, "method", method, "uri", u)
	return c.notify(method, params)
}

// Settle waits until the server has published no diagnostics for quiet
// (servers publish in bursts: tsserver its syntactic findings, then its
// semantic ones), or until deadline.
func (s *Server) Settle(quiet time.Duration, deadline time.Time) {
	for {
		s.mu.Lock()
		seen := s.diagSeen
		s.mu.Unlock()
		wait := min(quiet, time.Until(deadline))
		if wait <= 0 {
			return
		}
		select {
		case <-seen: // another publication: wait for quiet again
		case <-time.After(wait):
			return
		}
	}
}

// Diagnostics returns the last diagnostics the server published for path,
// waiting up to wait for a first (or a newer) publication.
func (s *Server) Diagnostics(path string, wait time.Duration) (json.RawMessage, bool) {
	u := URI(path)
	deadline := time.After(wait)
	for {
		s.mu.Lock()
		d, ok := s.diags[u]
		seen := s.diagSeen
		s.mu.Unlock()
		if ok {
			return d, true
		}
		select {
		case <-seen:
		case <-deadline:
			return nil, false
		}
	}
}

// Close asks the server to shut down and stops it.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	c, cmd := s.c, s.cmd
	s.mu.Unlock()
	if c == nil || cmd == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if _, err := c.call(ctx, "shutdown", nil); err == nil {
		c.notify("exit", nil)
	}
	select {
	case <-c.done:
	case <-time.After(2 * time.Second):
	}
	proc.KillGroup(cmd.Process.Pid)
}

// URI is the file URI of an absolute path, escaped as servers expect.
func URI(path string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(path)}).String()
}

// PathOf is the file path of a file URI ("" for another scheme).
func PathOf(u string) string {
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "file" {
		return ""
	}
	return filepath.FromSlash(p.Path)
}

// errOf adds what the server last wrote on stderr to err.
func errOf(err error, t *tail) error {
	if s := t.String(); s != "" {
		return fmt.Errorf("%w (its stderr: %s)", err, s)
	}
	return err
}

// tail keeps the last 2 KiB a process wrote.
type tail struct {
	mu sync.Mutex
	b  []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2048 {
		t.b = t.b[len(t.b)-2048:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}

var _ io.Writer = (*tail)(nil)
