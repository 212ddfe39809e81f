// Package web is the operator UI the hub serves on 127.0.0.1: runs (live
// over SSE), a run's verdict, diagram, timeline and audit envelope,
// approvals and proposals, the review document, the workspace and the
// diagram of a whole MCP session.
//
// Every request passes the guard (access.go) before any handler: a loopback
// Host header naming the UI's port, the launch token or the session cookie
// it was exchanged for, and for state changes POST with a matching Origin
// and the session's CSRF token. Refusals are ui.request.rejected events.
package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/internal/loopback"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
)

// DefaultAddr is where the UI listens unless told otherwise.
const DefaultAddr = "127.0.0.1:7717"

// Log is what the UI reads of the event log (a hub.Node).
type Log interface {
	View(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	BySession(ctx context.Context, id events.ID, from uint64, limit int) ([]events.Event, error)
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
	Head(ctx context.Context) (uint64, events.Hash, error)
	Follow(ctx context.Context, from uint64, fn func(events.Event) error) error
}

// noHost answers every call when no workspace host runs for the data dir.
type noHost struct{}

func (noHost) Call(context.Context, pipe.Request) (pipe.Response, error) {
	return pipe.Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: "no workspace host is running for this data dir: start one with tracebridge up --root DIR"}
}

// Options configure a Server.
type Options struct {
	// Addr is the address the UI listens on, 127.0.0.1:PORT.
	Addr string
	// Name is the host name the UI answers to, under .localhost (which
	// browsers resolve to loopback). Empty: a fresh tb-<random>.localhost.
	// Browsers keep cookies per host name, not per port, so a session
	// cookie set for 127.0.0.1 would reach every other listener on
	// 127.0.0.1; one set for an unguessable name reaches only this UI.
	Name    string
	Log     Log
	Host    host.Caller // nil: the workspace pages say no host is reachable
	Rec     events.Recorder
	Version string
	Logger  *slog.Logger
	Now     func() time.Time
	// LaunchKey signs launch tokens (MintLaunchToken); empty: a fresh
	// random one. Whoever holds it can mint a way in: keep it 0600.
	LaunchKey []byte
	// Descriptors is where upstream descriptors are kept whole by hash
	// (the data dir's descriptors/). Empty: only the recorded ones.
	Descriptors string
	// Operator names who decides in recorded decisions ("operator:alice").
	Operator string
	// OIDC, when set, signs people in with OpenID Connect ([auth]
	// ui_client_id) beside the launch link.
	OIDC *OIDC
	// ExportSession writes session id as a recorded-session file (what
	// `tracebridge session export` writes) to w. Nil: the UI offers no
	// export.
	ExportSession func(ctx context.Context, id events.ID, w io.Writer) error
}

// Server is the operator UI.
type Server struct {
	opts      Options
	port      string
	name      string // the host name the UI answers to
	launchKey []byte // signs launch tokens
	key       []byte // signs CSRF tokens

	mu       sync.Mutex
	sessions map[string]*uiSession
	signins  map[string]pendingSignin // sign-ins at the issuer, by state
	spent    map[string]time.Time     // launch nonces taken, until their expiry

	feed    *feed
	rejects *loopback.Refusals
	host    host.Client // the workspace host's operator commands
}

// New returns a server for opts.
func New(opts Options) (*Server, error) {
	_, port, err := net.SplitHostPort(opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("ui address %q: %w", opts.Addr, err)
	}
	if opts.Log == nil || opts.Rec == nil {
		return nil, errors.New("web: Log and Rec are required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Operator == "" {
		opts.Operator = "operator"
	}
	name := strings.ToLower(opts.Name)
	if name == "" {
		name = "tb-" + hex.EncodeToString(randomBytes(8)) + ".localhost"
	}
	if !strings.HasSuffix(name, ".localhost") || strings.ContainsAny(name, ":/[]@ ") {
		return nil, fmt.Errorf("ui name %q: want a name under .localhost", opts.Name)
	}
	s := &Server{opts: opts, port: port, name: name, launchKey: opts.LaunchKey, key: randomBytes(32), sessions: map[string]*uiSession{}, signins: map[string]pendingSignin{}, spent: map[string]time.Time{}}
	s.host = host.Client{Host: opts.Host, NewID: opts.Rec.NewID}
	if opts.Host == nil {
		s.host.Host = noHost{}
	}
	if len(s.launchKey) == 0 {
		s.launchKey = randomBytes(32)
	}
	s.feed = newFeed(opts.Log, opts.Logger)
	s.rejects = loopback.NewRefusals(events.KindUIRejected, opts.Now, opts.Rec.Emit)
	return s, nil
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported systems
	}
	return b
}

// URL is an address to open: it carries a fresh launch token, which one
// request may exchange for a session cookie within LaunchTTL.
func (s *Server) URL() string { return LaunchURL(s.Origin(), s.launchKey, s.opts.Now()) }

// LaunchKey is the key launch tokens are minted with (for run/ui.json).
func (s *Server) LaunchKey() []byte { return s.launchKey }

// Origin is the UI's own origin, http://NAME:PORT.
func (s *Server) Origin() string { return "http://" + net.JoinHostPort(s.name, s.port) }

// Listen listens on addr, which must be a loopback address: the UI never
// answers another interface.
func Listen(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--ui %q: want HOST:PORT on 127.0.0.1, or off", addr)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("--ui %q: the UI listens on loopback only (127.0.0.1:PORT)", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ui: %w (another tracebridge may serve its UI there: pass --ui 127.0.0.1:0 for a free port, or --ui off)", err)
	}
	return l, nil
}

// Serve answers on l until ctx ends.
func (s *Server) Serve(ctx context.Context, l net.Listener) error {
	// Only this user's processes connect (another user holding a launch
	// URL or a cookie gets nothing); idle connections are closed.
	l = loopback.SameUser(l, s.rejects.ForeignPeer, func() {
		s.opts.Logger.Warn("this system cannot tell which user a loopback connection comes from: the launch token and session cookie are the only checks")
	})
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 30 * time.Second,
		BaseContext: func(net.Listener) context.Context { return ctx }}
	go s.feed.run(ctx)
	s.opts.Rec.Emit(events.Event{Kind: events.KindUIStarted, Outcome: events.OK,
		Attrs: events.A("addr", s.opts.Addr)})
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	rctx, stopRejects := context.WithCancel(ctx)
	rejectsDone := make(chan struct{})
	go func() { s.rejects.Run(rctx); close(rejectsDone) }()
	defer func() { stopRejects(); <-rejectsDone }() // what was counted is recorded before the UI stops
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	return nil
}

// Handler is the UI behind its guard.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	assets := assetHandler()
	mux.Handle("GET /assets/", assets)
	mux.HandleFunc("GET /favicon.ico", func(w http.ResponseWriter, r *http.Request) { // what a browser asks for unbidden
		r.URL.Path = "/assets/favicon.svg"
		assets.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/runs", http.StatusSeeOther)
	})
	mux.HandleFunc("GET /runs", s.runsPage)
	mux.HandleFunc("GET /runs/rows", s.runsRows)
	mux.HandleFunc("GET /runs/{id}", s.runPage)
	mux.HandleFunc("GET /runs/{id}/triad.zip", s.triad)
	mux.HandleFunc("GET /sessions", s.sessionsPage)
	mux.HandleFunc("GET /sessions/{id}", s.sessionPage)
	mux.HandleFunc("GET /sessions/{id}/session.jsonl", s.sessionExport)
	mux.HandleFunc("GET /approvals", s.approvalsPage)
	mux.HandleFunc("GET /reviews", s.reviewsPage)
	mux.HandleFunc("GET /workspace", s.workspacePage)
	mux.HandleFunc("GET /events", s.sse)
	if s.opts.OIDC != nil {
		mux.HandleFunc("GET /auth/login", s.login)
		mux.HandleFunc("GET /auth/callback", s.callback)
	}
	for path, h := range s.actions() {
		mux.Handle(path, h) // any method: the guard refuses all but POST
	}
	return s.guard(mux)
}
