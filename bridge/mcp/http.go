package mcp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/loopback"
)

// HTTPOptions configures HTTPHandler. Token and Port are required.
type HTTPOptions struct {
	// Token is the bearer token every request must carry.
	Token string
	// Port is the port the handler is served on: the Host header must be
	// a loopback name with it, and an Origin, when sent, too.
	Port int
	// MaxBody caps one request body. Zero: the stdio line cap.
	MaxBody int64
	// MaxSessions bounds the open sessions. Zero: 64.
	MaxSessions int
	// IdleTimeout closes a session no request used for this long (and with
	// none in flight and no GET stream open). Zero: 30m.
	IdleTimeout time.Duration
	// OAuth, when set, lets in access tokens of its issuer beside Token
	// (config [auth]): each request runs as the user its token names.
	OAuth *OAuth
	// Refusals aggregates the refusals (shared with the listener's, which
	// records other users' connections). Nil: the handler's own, flushed
	// until ctx ends.
	Refusals *loopback.Refusals
}

// HTTPHandler serves the bridge over Streamable HTTP at /mcp. Each session
// (initialize without Mcp-Session-Id, the 2025 protocols) and each request
// without one (the 2026-07-28 stateless path) is a session of Serve over
// pipes, so a request over HTTP is recorded exactly as over stdio. Before
// anything reaches it: the Host must be loopback with this port (DNS
// rebinding), an Origin must be this origin, the bearer token must match,
// and the body must fit MaxBody; a refusal is recorded (mcp.http.rejected,
// with its code) and nothing reaches the executor.
func (s *Server) HTTPHandler(ctx context.Context, opts HTTPOptions) http.Handler {
	if opts.MaxBody <= 0 {
		opts.MaxBody = int64(s.opts.MaxLineLength)
	}
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = 64
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = 30 * time.Minute
	}
	if opts.Refusals == nil {
		opts.Refusals = loopback.NewRefusals(events.KindMCPHTTPRejected, nil, s.opts.Emitter.Emit)
		go opts.Refusals.Run(ctx)
	}
	return &front{s: s, ctx: ctx, opts: opts, sessions: map[string]*httpSession{}}
}

type front struct {
	s    *Server
	ctx  context.Context
	opts HTTPOptions

	mu       sync.Mutex
	sessions map[string]*httpSession
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if code, msg := f.guard(r); code != "" {
		f.reject(w, r, &refusal{code: code, msg: msg})
		return
	}
	if f.opts.OAuth != nil && (r.URL.Path == metadataPath || r.URL.Path == metadataPath+"/mcp") {
		f.opts.OAuth.serveMetadata(w, r)
		return
	}
	user, ref := f.authenticate(r)
	if ref != nil {
		f.reject(w, r, ref)
		return
	}
	r = r.WithContext(identity.With(r.Context(), user))
	if r.URL.Path != "/mcp" {
		http.NotFound(w, r)
		return
	}
	sid := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost {
		f.streamOrEnd(w, r, sid, user)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, f.opts.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			f.reject(w, r, &refusal{code: events.CodeTooLarge, msg: fmt.Sprintf("the body exceeds %d bytes", f.opts.MaxBody)})
			return
		}
		http.Error(w, "reading the body failed", http.StatusBadRequest)
		return
	}
	msg, err := readFrontMessage(body)
	if err != nil {
		f.reject(w, r, &refusal{code: events.CodeMalformedFrame, msg: "the body is not one JSON-RPC message (batches are not supported)"})
		return
	}
	call := len(msg.ID) > 0 && msg.Method != ""
	if sid == "" { // a request of the stateless protocol?
		if sm := msg.statelessMeta(); statelessRequest(r.Header.Get("Mcp-Protocol-Version"), sm) {
			f.stateless(w, r, body, msg.ID, msg.Params.Meta["progressToken"], call, sm)
			return
		}
	}
	switch {
	case sid != "":
		sess := f.session(sid)
		if sess == nil {
			http.Error(w, "no such session (it ended or expired): initialize again", http.StatusNotFound)
			return
		}
		if !f.owns(w, r, sess, user) {
			return
		}
		sess.post(w, r, body, msg.ID, msg.Params.Meta["progressToken"], call)
	case msg.Method == "initialize":
		sess, err := f.open(true, user)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Mcp-Session-Id", sess.id)
		sess.post(w, r, body, msg.ID, msg.Params.Meta["progressToken"], call)
	case call:
		// No session and no protocol named: a session of its own, ended
		// once it is answered.
		sess, err := f.open(false, user)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		sess.post(w, r, body, msg.ID, msg.Params.Meta["progressToken"], call)
		sess.close()
	default:
		w.WriteHeader(http.StatusAccepted) // a notification outside a session: nothing to tell
	}
}

// streamOrEnd answers GET (a session's stream) and DELETE (its end) for
// the session's owner, and refuses other methods.
func (f *front) streamOrEnd(w http.ResponseWriter, r *http.Request, sid string, user identity.User) {
	sess := f.session(sid)
	if sess != nil && !f.owns(w, r, sess, user) {
		return
	}
	switch {
	case r.Method == http.MethodGet && sess != nil && r.Header.Get("Last-Event-ID") != "":
		sess.resume(w, r, r.Header.Get("Last-Event-ID"))
	case r.Method == http.MethodGet && sess != nil:
		sess.serveGET(w, r)
	case r.Method == http.MethodGet:
		w.Header().Set("Allow", "POST")
		http.Error(w, "GET needs an Mcp-Session-Id of an open session", http.StatusMethodNotAllowed)
	case r.Method == http.MethodDelete && sess != nil:
		f.drop(sid)
		sess.close()
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodDelete:
		http.Error(w, "no such session", http.StatusNotFound)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
	}
}

// guard checks Host and Origin, in that order; authenticate, the token.
func (f *front) guard(r *http.Request) (events.Code, string) {
	if !f.ownHost(r.Host) {
		return events.CodeForeignHost, "the Host header must be 127.0.0.1, localhost or [::1] with this port (or the host of [auth] resource)"
	}
	if o := r.Header.Get("Origin"); o != "" && !f.ownOrigin(o) {
		return events.CodeForeignOrigin, "requests from other origins are refused"
	}
	return "", ""
}

// ownHost: a loopback name with this port, or the resource's host (a
// proxy in front of the front door forwards it).
func (f *front) ownHost(hostport string) bool {
	if f.opts.OAuth != nil && strings.EqualFold(hostport, f.opts.OAuth.host()) {
		return true
	}
	name, ok := loopback.SplitHost(hostport, strconv.Itoa(f.opts.Port))
	return ok && loopback.IsLoopbackName(name)
}

func (f *front) ownOrigin(o string) bool {
	if f.opts.OAuth != nil {
		if u, err := url.Parse(f.opts.OAuth.Resource); err == nil && strings.EqualFold(o, u.Scheme+"://"+u.Host) {
			return true
		}
	}
	rest, ok := strings.CutPrefix(o, "http://")
	return ok && f.ownHost(rest)
}

// owns reports whether user opened sess, refusing the request when not
// (a session id another user's client leaked is no way into their
// session: SessionNotOwned, recorded).
func (f *front) owns(w http.ResponseWriter, r *http.Request, sess *httpSession, user identity.User) bool {
	if sess.owner.Subject == user.Subject && sess.owner.Issuer == user.Issuer {
		return true
	}
	f.reject(w, r, &refusal{code: events.CodeSessionNotOwned, msg: "this session was opened by another user: initialize a session of your own"})
	return false
}

// reject answers a refused request, closing its connection, and records
// it (aggregated: a flood of refusals cannot grow the log without bound,
// and what is not recorded one by one is counted).
func (f *front) reject(w http.ResponseWriter, r *http.Request, ref *refusal) {
	status := events.HTTPStatus(ref.code)
	f.opts.Refusals.Record(ref.code, r.Method+" "+r.URL.Path+" "+r.Host+" "+r.Header.Get("Origin")+" "+ref.msg, map[string]string{
		"method": r.Method, "path": r.URL.Path, "host": r.Host, "origin": r.Header.Get("Origin"), "remote": r.RemoteAddr, "error": ref.msg})
	if ref.code == events.CodeUnauthenticated || ref.code == events.CodeInsufficientScope {
		w.Header().Set("WWW-Authenticate", f.challenge(ref))
	}
	w.Header().Set("Connection", "close")
	http.Error(w, string(ref.code)+": "+ref.msg, status)
}

func (f *front) session(id string) *httpSession {
	if id == "" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[id]
	if s != nil {
		s.touch()
	}
	return s
}

func (f *front) drop(id string) {
	f.mu.Lock()
	delete(f.sessions, id)
	f.mu.Unlock()
}

// open starts a session of Serve over pipes; kept ones are listed under a
// new Mcp-Session-Id and closed after IdleTimeout without requests.
func (f *front) open(keep bool, owner identity.User) (*httpSession, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if keep && len(f.sessions) >= f.opts.MaxSessions {
		// A new client always gets in: the least recently used session
		// that has nothing in flight makes room (its client, if it comes
		// back, gets 404 and initializes again). Only when every session
		// is busy is the new one refused. The stateless path is not capped.
		var lru *httpSession
		for _, s := range f.sessions {
			if s.busy() {
				continue
			}
			if lru == nil || s.lastUsed().Before(lru.lastUsed()) {
				lru = s
			}
		}
		if lru == nil {
			return nil, fmt.Errorf("%d sessions are open and every one has a request in flight: retry when one ends", len(f.sessions))
		}
		delete(f.sessions, lru.id)
		go lru.close()
	}
	b := make([]byte, 16)
	rand.Read(b)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	sess := &httpSession{id: hex.EncodeToString(b), owner: owner, in: inW, kept: keep, emit: f.s.opts.Emitter.Emit, waiters: map[string]chan []byte{}, progress: map[string]chan []byte{},
		streams: map[string]chan []byte{}, related: map[string]string{}, byCall: map[string]*sseLog{},
		done: make(chan struct{}), served: make(chan struct{}), last: time.Now()}
	go func() {
		defer close(sess.served)
		ctx := identity.With(withHTTP(withRelated(f.ctx, sess.relate)), owner)
		if keep {
			ctx = withPoll(ctx, sess.poll)
		} else {
			ctx = withOneRequest(ctx)
		}
		f.s.Serve(ctx, inR, outW)
		outW.Close()
	}()
	go sess.demux(outR)
	if keep {
		f.sessions[sess.id] = sess
		go func() { // idle expiry
			t := time.NewTicker(f.opts.IdleTimeout / 4)
			defer t.Stop()
			for {
				select {
				case <-sess.done:
					return
				case <-t.C:
					if !sess.busy() && sess.idle() > f.opts.IdleTimeout { // a request in flight (an approval's wait) or an open GET stream is use
						f.drop(sess.id)
						sess.close()
						return
					}
				}
			}
		}()
	}
	return sess, nil
}

// httpSession is one bridge session behind HTTP: requests go in as lines,
// answers come back by JSON-RPC id, notifications to the stream that asked
// for them (progress by token) or to the GET stream.
type httpSession struct {
	id    string
	owner identity.User // who opened it: only they use it
	in    *io.PipeWriter
	// stateless: the session carries one 2026-07-28 request, whose
	// answer's HTTP status says how it ended (statelessStatus).
	stateless bool
	kept      bool                         // listed under its id: its streams can be resumed (stream.go)
	emit      func(events.Event) events.ID // records what the session's streams do

	mu       sync.Mutex
	waiters  map[string]chan []byte // JSON-RPC id → its response
	progress map[string]chan []byte // progress token → the POST stream waiting for it
	streams  map[string]chan []byte // JSON-RPC id of a call → its POST stream
	order    []string               // the calls with a stream, oldest first
	related  map[string]string      // id of a request to the client → id of the call it belongs to
	get      chan []byte            // the GET stream, when one is open
	logs     []*sseLog              // the resumable streams kept, oldest first
	byCall   map[string]*sseLog     // JSON-RPC id of a call in flight → its stream's log
	nextLog  int
	resumers int // GET streams resuming one of logs
	last     time.Time
	closed   bool
	done     chan struct{} // closed by close
	served   chan struct{} // closed when Serve returned (its events are durable)
}

func (h *httpSession) touch() { h.mu.Lock(); h.last = time.Now(); h.mu.Unlock() }

func (h *httpSession) lastUsed() time.Time { h.mu.Lock(); defer h.mu.Unlock(); return h.last }

// busy reports whether a request is in flight or a GET stream is open.
func (h *httpSession) busy() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.waiters) > 0 || h.get != nil || h.resumers > 0
}

func (h *httpSession) idle() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return time.Since(h.last)
}

// close ends the session's input; Serve answers what it read and returns.
func (h *httpSession) close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.done)
	h.mu.Unlock()
	h.in.Close()
	<-h.served
}

// demux routes the bridge's output lines.
func (h *httpSession) demux(out io.Reader) {
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 0, 4<<10), 64<<20) // grown as lines need: a session of one request reads one
	for sc.Scan() {
		line := append([]byte(nil), sc.Bytes()...)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProgressToken json.RawMessage `json:"progressToken"`
			} `json:"params"`
		}
		if json.Unmarshal(line, &m) != nil {
			continue
		}
		h.mu.Lock()
		var to chan []byte
		switch {
		case m.Method == "" && len(m.ID) > 0:
			to = h.waiters[canonicalID(m.ID)]
			delete(h.waiters, canonicalID(m.ID))
		case m.Method == "notifications/progress":
			to = h.progress[string(m.Params.ProgressToken)]
		case len(m.ID) > 0: // a request to the client: on the stream of the call it belongs to
			key := canonicalID(m.ID)
			to = h.streams[h.related[key]]
			delete(h.related, key)
			if to == nil {
				to = h.fallback()
			}
		default:
			to = h.fallback()
		}
		h.mu.Unlock()
		if to != nil {
			select {
			case to <- line:
			default: // a stream that does not keep up loses notifications, never the session
			}
		}
	}
	h.mu.Lock()
	for id, ch := range h.waiters {
		close(ch)
		delete(h.waiters, id)
	}
	h.mu.Unlock()
}

// fallback is the stream for what belongs to no call: the GET stream, else
// the newest call's POST stream (a client without a GET stream still
// hears what the server asks and tells while it waits for an answer).
// h.mu is held.
func (h *httpSession) fallback() chan []byte {
	if h.get != nil {
		return h.get
	}
	if n := len(h.order); n > 0 {
		return h.streams[h.order[n-1]]
	}
	return nil
}

// relate notes that request out to the client belongs to call in.
func (h *httpSession) relate(out, in json.RawMessage) {
	h.mu.Lock()
	h.related[canonicalID(out)] = canonicalID(in)
	h.mu.Unlock()
}

// post sends one message into the session and, for a call, answers with
// its response: as an SSE stream (progress first) when the client accepts
// one, else as JSON.
func (h *httpSession) post(w http.ResponseWriter, r *http.Request, body, id, token json.RawMessage, call bool) {
	h.touch()
	defer h.touch() // idle from the answer on, not from a long request's start
	var resp, prog chan []byte
	done := func() {}
	var log *sseLog
	var me int
	if call {
		var ok bool
		if resp, prog, done, ok = h.await(id, token, acceptsSSE(r)); !ok {
			http.Error(w, "a request with this id is in flight", http.StatusConflict)
			return
		}
		if h.primes(r) {
			log = h.newLog(id)
			me = log.attach() // before the call goes in: a poll cannot come first
		}
	}
	if _, err := h.in.Write(append(bytes.TrimSpace(body), '\n')); err != nil {
		done()
		http.Error(w, "the session has ended: initialize again", http.StatusNotFound)
		return
	}
	if !call {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	if log != nil {
		h.serveLog(w, r, log, me, resp, prog, done)
		return
	}
	defer done()
	stream := acceptsSSE(r)
	fl, _ := w.(http.Flusher)
	opened := false
	open := func() { // the stream's header: at once, or (stateless) with its first message
		if stream && !opened {
			opened = true
			eventStreamHeader(w)
		}
	}
	if !h.stateless {
		open()
	}
	for {
		select {
		case line := <-prog:
			if stream {
				open()
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
				if fl != nil {
					fl.Flush()
				}
			}
		case line, ok := <-resp:
			if !ok {
				if !stream {
					http.Error(w, "the session ended before answering", http.StatusServiceUnavailable)
				}
				return
			}
			if h.stateless && !opened { // an error refused as sent: its status says so, as JSON
				if status := statelessStatus(line); status != http.StatusOK {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(status)
					w.Write(line)
					return
				}
			}
			if stream {
				open()
				drainReady(prog, func(p []byte) { fmt.Fprintf(w, "event: message\ndata: %s\n\n", p) })
				fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
				if fl != nil {
					fl.Flush()
				}
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Write(line)
			return
		case <-r.Context().Done():
			// The client went away: cancel the request as a client would
			// (it cannot resume this stream).
			h.cancel(id, "the HTTP request ended")
			return
		}
	}
}
