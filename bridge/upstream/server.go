package upstream

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	people "github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/lineconn"
)

// Server is one upstream: its connection, its process (stdio), the tools it
// listed, and the backoff after a crash. Safe for concurrent use.
type Server struct {
	g    *Gateway
	name string
	cfg  config.Server

	mu        sync.Mutex
	links     map[string]*link // by the owning client session's key ("" shared)
	crashes   int
	nextStart time.Time
	lastFault string                 // why the last session ended, for the next refusal
	tools     map[string]*toolState  // upstream tool name → what was listed
	listings  [2][]*sdk.Tool         // the last listing on the old protocol [0] and the new [1] (unionLocked)
	extras    atomic.Pointer[extras] // its prompts and resources (read without mu: SyncTools runs under it)
	// annotations are each listed tool's annotations with the
	// specification's defaults (map[string]bool), read without mu by
	// result rules while a call may hold it.
	annotations sync.Map
	closed      bool

	sem      chan struct{} // bounds the calls in flight
	progress sync.Map      // progress token → *progressSink
	rounds   roundBook     // multi-round-trip calls' states → their first request

	logs, listChanged budget      // what of its notifications is recorded
	pins              budget      // first sights and changes of its tools recorded
	refreshQueued     atomic.Bool // a list_changed listing waits to run
	listed            atomic.Bool // its tools are in the catalog (listed, or from its pins)
	lastRefresh       atomic.Int64

	// identity is its identity pin as last read, while fresh (identity.go):
	// each client session's connection need not read the pins view again.
	identity identityCache
}

// toolState is one listed tool: its descriptor as the upstream sent it and
// the hash that is compared with the pin.
type toolState struct {
	tool *sdk.Tool
	desc string
	hash string
	// held is a tool the guard held on first sight: in the catalog, so a
	// call is refused with why (ToolFlagged), but never listed.
	held bool
	// admitted is until when the pin check passed (a time.Time).
	admitted atomic.Value
}

// maxInFlight bounds one upstream's concurrent calls; a call waits for a
// slot no longer than its own deadline.
const maxInFlight = 32

func newServer(g *Gateway, name string, cfg config.Server) *Server {
	return &Server{g: g, name: name, cfg: cfg, links: map[string]*link{}, tools: map[string]*toolState{}, sem: make(chan struct{}, maxInFlight),
		logs: budget{n: logBudget, window: time.Minute}, listChanged: budget{n: listChangedBudget, window: time.Minute},
		pins: budget{n: pinBudget, window: time.Minute}}
}

// emit records one upstream event for request req (zero: none).
func (s *Server) emit(kind string, req, op events.ID, outcome events.Outcome, code events.Code, since time.Time, attrs events.Attrs) {
	s.emitAs(events.ID{}, kind, req, op, outcome, code, since, attrs)
}

// emitAs is emit with the event's id chosen (zero: a fresh one).
func (s *Server) emitAs(id events.ID, kind string, req, op events.ID, outcome events.Outcome, code events.Code, since time.Time, attrs events.Attrs) {
	attrs = attrs.With(events.AttrServer, s.name) // a caller's attributes stay its own
	e := events.Event{ID: id, Kind: kind, RequestID: req, OperationID: op, Outcome: outcome, Code: code, Attrs: attrs}
	s.g.opts.Emitter.Emit(e.Took(since, s.g.opts.Now()))
}

// sharedProtocol is the protocol version of the shared link.
const sharedProtocol = "2025-11-25"

// maxBackoffWait is the longest restart backoff a call waits out; within
// a longer one it is refused at once, with why the server went down.
const maxBackoffWait = 5 * time.Second

// session returns the live link for ctx's client session (keyOf),
// starting or dialing the upstream when there is none. Within the backoff
// after a crash a call waits for the restart (at most maxBackoffWait and
// its own deadline), else it is refused at once with why the last one
// ended.
func (s *Server) session(ctx context.Context, req, op events.ID) (*link, error) {
	key, owner, version := s.keyOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	for waited := false; ; waited = true {
		if l := s.links[key]; l != nil {
			return l, nil
		}
		if s.closed {
			return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s: the bridge is shutting down", s.name)
		}
		// One wait for the backoff, on the real clock: the injected one
		// (a re-drive's recorded clock) need not move while we sleep.
		wait := s.nextStart.Sub(s.g.opts.Now())
		if wait <= 0 || waited {
			break
		}
		if d, ok := ctx.Deadline(); wait > maxBackoffWait || ok && time.Until(d) < wait {
			err := events.Errorf(events.CodeUpstreamUnavailable, "server %s (%s) %s; the bridge starts it again in %s",
				s.name, s.cfg.Describe(), s.lastFault, wait.Round(time.Millisecond))
			s.emit(events.KindUpstreamUnavailable, req, op, events.Unavailable, err.Code, time.Time{}, events.A("error", err.Msg))
			return nil, err
		}
		s.mu.Unlock()
		select {
		case <-time.After(wait):
		case <-ctx.Done():
		}
		s.mu.Lock()
		if ctx.Err() != nil {
			return nil, events.Errorf(events.CodeCancelled, "the call ended while server %s was being restarted", s.name)
		}
	}
	l := &link{s: s, key: key, owner: owner, version: version, user: s.userOf(ctx)}
	if err := s.connect(ctx, req, op, l); err != nil {
		s.crashed(err.Error())
		e := events.AsErr(err, events.CodeUpstreamUnavailable)
		s.emit(events.KindUpstreamUnavailable, req, op, events.OutcomeOf(e.Code), e.Code, time.Time{}, events.A("error", e.Msg))
		return nil, e
	}
	s.links[key] = l
	s.crashes = 0
	// What an earlier session listed says nothing of this one: until this
	// one lists its tools, none of them is admitted.
	s.tools = map[string]*toolState{}
	if err := s.refreshLocked(ctx, req, l.sess); err != nil {
		s.g.opts.Logger.Warn("upstream tools could not be listed", "server", s.name, "err", err)
	}
	go s.watch(l)
	return l, nil
}

// live reports whether ctx's client session has a link.
func (s *Server) live(ctx context.Context) bool {
	key, _, _ := s.keyOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.links[key] != nil
}

// crashed notes a failed start or a lost session: the next start waits
// 250ms, doubling per crash in a row, at most 30s.
func (s *Server) crashed(why string) {
	s.crashes++
	backoff := 250 * time.Millisecond << min(s.crashes-1, 7)
	backoff = min(backoff, 30*time.Second)
	s.nextStart = s.g.opts.Now().Add(backoff)
	s.lastFault = why
}

// watch waits for the link's session to end and forgets it, so the next
// call starts the upstream again; an eager server is restarted after
// backoff.
func (s *Server) watch(l *link) {
	l.sess.Wait()
	s.mu.Lock()
	if s.links[l.key] != l {
		s.mu.Unlock()
		if l.proc != nil {
			l.proc.stop()
		}
		return
	}
	// Forget the session at once (a call now starts a new one, after the
	// backoff), then learn how it ended.
	delete(s.links, l.key)
	conn, p, closed := l.conn, l.proc, s.closed
	why := "closed its connection"
	if f := conn.fault(); f != "" {
		why = f
	}
	if !closed {
		s.crashed(why)
	}
	next := s.nextStart
	s.mu.Unlock()
	if p != nil {
		// A process that crashed exits on its own within moments; only one
		// that is still running after that is stopped by us (and its exit
		// is then not a crash).
		p.waitExit(500 * time.Millisecond)
		if st := p.exitText(); st != "" && conn.fault() == "" {
			s.mu.Lock()
			s.lastFault = st
			s.mu.Unlock()
		}
		p.stop()
	}
	if !closed && s.cfg.Eager() && l.key == "" {
		time.AfterFunc(time.Until(next), func() {
			if _, err := s.session(context.Background(), events.ID{}, events.ID{}); err != nil {
				s.g.opts.Logger.Warn("upstream restart failed", "server", s.name, "err", err)
			}
		})
	}
}

// connect starts or dials the upstream for l and completes the MCP
// handshake, declaring l's client's capabilities. Its errors say which
// command or URL failed and how.
func (s *Server) connect(ctx context.Context, req, op events.ID, l *link) error {
	secrets, err := s.g.opts.Secrets(s.cfg.ServerSecrets())
	if err != nil {
		return events.Errorf(events.CodeSecretUnresolved, "server %s: %v", s.name, err)
	}
	expand := func(v string) string { return config.ExpandSecrets(v, func(n string) string { return secrets[n] }) }
	ip, now, err := s.identityBefore(ctx, req, l)
	if err != nil {
		return err
	}
	var inner sdk.Transport
	switch {
	case s.g.opts.Dial != nil:
		inner, err = s.dialed(ctx)
	case s.cfg.URL != "":
		inner, err = s.overHTTP(l, expand)
	default:
		inner, err = s.child(ctx, req, op, l, expand)
	}
	if err != nil {
		return err
	}
	var t sdk.Transport = &evidenceTransport{inner: inner, l: l}
	if _, streamable := inner.(*sdk.StreamableClientTransport); streamable {
		t = inner // its headerTransport records what is sent
	}
	client := l.newClient(ctx)
	t0 := s.g.opts.Now()
	cctx, cancel := context.WithTimeout(ctx, s.cfg.RequestTimeout())
	defer cancel()
	// The link speaks its client's protocol version (what a server may ask
	// of a client during a request differs between versions: keyOf); the
	// SDK falls back when the server does not know it.
	cs, err := s.handshake(ctx, cctx, l, t, client)
	if err != nil {
		if l.tls != nil && l.tls.want != "" && l.tls.key() != "" && l.tls.key() != l.tls.want {
			now.TLSKey = l.tls.key()
			return s.checkIdentity(req, ip, now) // refused in the handshake: nothing was sent
		}
		return s.connectError(err, cctx, l)
	}
	if err := s.identityAfter(req, ip, now, l, cs); err != nil {
		return err
	}
	l.sess = cs
	attrs := events.Attrs(nil)
	if s.cfg.URL != "" {
		attrs.Set("url", events.SafeURL(s.cfg.URL))
		if u, err := url.Parse(s.cfg.URL); err == nil && config.Plaintext(u) {
			attrs.Set("plaintext", "allowed") // allow_plaintext = true: in clear, on purpose
		}
	}
	if ir := cs.InitializeResult(); ir != nil {
		attrs.Set("protocol", ir.ProtocolVersion)
		if ir.ServerInfo != nil {
			attrs.Set("serverInfo", ir.ServerInfo.Name+"/"+ir.ServerInfo.Version)
		}
	}
	s.emit(events.KindUpstreamConnected, req, op, events.OK, "", t0, attrs)
	// Ask for the server's log messages at the level l's client asked for
	// (info when it did not say); a server without logging says no.
	l.setLevel(cctx, l.level())
	return nil
}

// handshake connects l's client at the link's version. A server of the
// new protocol only refuses initialize: an HTTP link then asks for the new
// protocol instead, and the SDK answers the server's input requests by
// asking the link's old client (elicitation, sampling, roots, relayed as
// before). A stdio process is not asked twice.
func (s *Server) handshake(ctx, cctx context.Context, l *link, t sdk.Transport, client *sdk.Client) (*sdk.ClientSession, error) {
	cs, err := client.Connect(cctx, t, &sdk.ClientSessionOptions{ProtocolVersion: l.version})
	if err == nil || s.cfg.URL == "" || l.version == "" || l.version >= newProtocol || cctx.Err() != nil ||
		l.tls != nil && l.tls.want != "" && l.tls.key() != l.tls.want {
		return cs, err
	}
	return l.newClient(ctx).Connect(cctx, t, &sdk.ClientSessionOptions{ProtocolVersion: newProtocol})
}

// dialed is the transport a re-drive's recording serves (Options.Dial).
func (s *Server) dialed(ctx context.Context) (sdk.Transport, error) {
	t, err := s.g.opts.Dial(ctx, s.name)
	if err != nil {
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s: %v", s.name, err)
	}
	return t, nil
}

// overHTTP is a url server's transport (Streamable HTTP, or SSE): its
// configured headers sent to its own origin only, a redirect elsewhere
// refused, its OAuth grant when it has one.
func (s *Server) overHTTP(l *link, expand func(string) string) (sdk.Transport, error) {
	u, err := url.Parse(s.cfg.URL)
	if err != nil {
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s: url: %v", s.name, err)
	}
	if config.Plaintext(u) && !s.cfg.AllowPlaintext {
		return nil, events.Errorf(events.CodePlaintextUpstream, "server %s: %s is another host over http://, and its headers would cross the network in clear: use https://, or set allow_plaintext = true on [servers.%s]",
			s.name, events.SafeURL(s.cfg.URL), s.name)
	}
	ht := &headerTransport{origin: origin(u), headers: map[string]string{}, sent: s.sentOverHTTP, order: &l.order, maxFrame: s.g.opts.MaxFrame}
	for k, v := range s.cfg.Headers {
		ht.headers[k] = expand(v)
	}
	if l.tls != nil {
		base := http.DefaultTransport.(*http.Transport).Clone()
		base.TLSClientConfig = &tls.Config{VerifyConnection: l.tls.verify}
		ht.base = base
	}
	hc := &http.Client{Transport: ht, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if origin(r.URL) != ht.origin {
			return fmt.Errorf("server %s redirected to %s, another origin than %s: refused (its configured headers go to %s only)",
				s.name, origin(r.URL), ht.origin, ht.origin)
		}
		return nil
	}}
	if s.cfg.Transport == "sse" {
		return detached{&sdk.SSEClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: s.g.opts.MaxFrame}}, nil
	}
	st := &sdk.StreamableClientTransport{Endpoint: s.cfg.URL, HTTPClient: hc, MaxEventSize: s.g.opts.MaxFrame}
	if s.cfg.OAuth != nil {
		l.oauth = s.grant(l.user)
		st.OAuthHandler = l.oauth
	}
	return st, nil
}

// child starts a stdio server as l's process: its own environment (never
// another server's secrets), its own process group, confined unless its
// sandbox is off, its start and its exit recorded.
func (s *Server) child(ctx context.Context, req, op events.ID, l *link, expand func(string) string) (sdk.Transport, error) {
	env := s.g.opts.Config.ChildEnv(s.name, s.g.opts.Getenv)
	var own []string // the server's own env, whose paths its confinement grants
	for _, k := range sortedKeys(s.cfg.Env) {
		own = append(own, k+"="+expand(s.cfg.Env[k]))
	}
	env = append(env, own...)
	exe, err := resolveCommand(s.cfg.Command)
	var conf confinement
	if err == nil {
		conf, env, err = s.confinement(ctx, l, exe, env, own)
	}
	if err != nil {
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s: could not start `%s`: %v", s.name, s.cfg.Describe(), err)
	}
	p, err := startProcess(s.cfg, exe, env, conf.spec, s.g.opts.Logger.With("server", s.name), s.g.opts.Emitter.Redactor())
	if err != nil {
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s: could not start `%s`: %v", s.name, s.cfg.Describe(), err)
	}
	p.confined = conf.spec != nil
	l.proc = p
	s.emit(events.KindUpstreamStarted, req, op, events.OK, "", time.Time{}, s.spawnAttrs(p, exe, env, conf))
	go s.recordExit(p, req, op)
	return &lineconn.Transport{Reader: p.stdout, Writer: p.stdin, MaxFrame: s.g.opts.MaxFrame}, nil
}

// connectError says how the handshake failed: the process exited (with its
// code and last stderr lines), the URL refused, or no answer in time.
func (s *Server) connectError(err error, ctx context.Context, l *link) error {
	if p := l.proc; p != nil {
		p.waitExit(500 * time.Millisecond)
		defer p.stop()
		if st := p.exitText(); st != "" {
			if hint := confinedHint(s.name, p.tail()); p.confined && hint != "" {
				st += ". " + hint
			}
			return events.Errorf(events.CodeUpstreamUnavailable, "server %s: `%s` %s before the MCP handshake", s.name, s.cfg.Describe(), st)
		}
	}
	if r := l.oauth.takeRefusal(); r != nil {
		return events.Errorf(events.CodeUpstreamUnauthorized, "%s", s.g.redact(s.safe(r.Error())))
	}
	if f := l.conn.fault(); f != "" {
		return events.Errorf(events.CodeUpstreamProtocol, "server %s (%s) %s during the MCP handshake", s.name, s.cfg.Describe(), f)
	}
	if ctx.Err() != nil {
		return events.Errorf(events.CodeUpstreamUnavailable, "server %s (%s) did not complete the MCP handshake within %s", s.name, s.cfg.Describe(), s.cfg.RequestTimeout())
	}
	return events.Errorf(events.CodeUpstreamUnavailable, "server %s (%s): MCP handshake failed: %s", s.name, s.cfg.Describe(), s.g.redact(s.safe(err.Error())))
}

// grant is the server's OAuth handler over its stored grant, or with
// per_user the grant of user (none yet, or one that cannot be read: the
// server's refusal says to log in, and how).
func (s *Server) grant(user people.User) *grantHandler {
	name := GrantName(s.name, s.cfg.OAuth.PerUser, user)
	login := "tracebridge servers login " + s.name
	if name != s.name {
		login += " --user " + user.Subject + " --issuer " + user.Issuer + " (each user's own authorization: [servers." + s.name + ".oauth] per_user)"
	}
	if s.g.opts.Tokens == nil {
		return &grantHandler{name: name, login: login, d: grantDeps{store: noGrants{}, register: func(string) {}, warn: func(string, error) {}}}
	}
	d := grantDeps{resource: resourceOf(s.cfg.URL), store: s.g.opts.Tokens, register: func(v string) {
		if v != "" {
			s.g.opts.Emitter.Redactor().Register(v)
		}
	}, warn: func(msg string, err error) { s.g.opts.Logger.Warn(msg, "server", s.name, "err", err) }}
	h := &grantHandler{name: name, login: login, d: d}
	h.load()
	return h
}

// recordExit records the process's end with its exit code and the last
// lines it wrote to stderr (redacted).
func (s *Server) recordExit(p *process, req, op events.ID) {
	<-p.done
	s.mu.Lock()
	closing := s.closed || p.requested
	s.mu.Unlock()
	attrs := events.A("exitCode", fmt.Sprint(p.exitCode()), "stderr", p.tail())
	if closing {
		s.emit(events.KindUpstreamExited, events.ID{}, events.ID{}, events.OK, "", time.Time{}, attrs)
		return
	}
	attrs.Set("error", p.exitText())
	if p.confined {
		if hint := confinedHint(s.name, p.tail()); hint != "" {
			attrs.Set("hint", hint)
		}
	}
	s.emit(events.KindUpstreamExited, events.ID{}, events.ID{}, events.Unavailable, events.CodeUpstreamUnavailable, time.Time{}, attrs)
}

// notification records one notification of method from the upstream,
// within b's budget (attrs are its own).
func (s *Server) notification(b *budget, method string, attrs events.Attrs) {
	if s.within(b, method) {
		attrs = attrs.With(events.AttrMethod, method)
		s.emit(events.KindUpstreamNotification, events.ID{}, events.ID{}, events.OK, "", zeroTime, attrs)
	}
}

// within reports whether one more event of what may be recorded now under
// b, recording the count of those past it once their window is over (a
// server sending thousands grows the log by a bounded amount).
func (s *Server) within(b *budget, what string) bool {
	ok, dropped := b.take(s.g.opts.Now())
	if dropped > 0 {
		s.dropped(what, dropped)
	}
	return ok
}

// dropped records how many notifications of method were not recorded.
func (s *Server) dropped(method string, n int) {
	s.emit(events.KindUpstreamNotification, events.ID{}, events.ID{}, events.OK, "", zeroTime, events.A("method", method, "dropped", fmt.Sprint(n), "note", "notifications past the server's budget per minute are counted, not recorded one by one"))
}

// close ends the session and stops the process.
func (s *Server) close() {
	for method, b := range map[string]*budget{"notifications/message": &s.logs, "notifications/tools/list_changed": &s.listChanged, "tools/list": &s.pins} {
		if n := b.drain(); n > 0 {
			s.dropped(method, n)
		}
	}
	s.mu.Lock()
	s.closed = true
	links := s.links
	s.links = map[string]*link{}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range links {
		wg.Go(func() { l.close() })
	}
	wg.Wait()
}

// headerTransport adds the configured headers (secrets expanded) to the
// requests to an HTTP upstream's own origin (scheme, host and port), and
// to no other: the client refuses a redirect elsewhere, and this is the
// second lock on that door.
type headerTransport struct {
	origin  string
	headers map[string]string
	sent    func(*http.Request) // records each request as it goes
	// order counts the notifications of the event streams it reads.
	order    *order
	maxFrame int
	// base carries the requests (nil: http.DefaultTransport); an https
	// server's checks its TLS key against the pin.
	base http.RoundTripper
}

func (h *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if h.sent != nil {
		h.sent(r)
	}
	if origin(r.URL) == h.origin {
		r = r.Clone(r.Context())
		for k, v := range h.headers {
			r.Header.Set(k, v)
		}
	}
	base := h.base
	if base == nil {
		base = http.DefaultTransport
	}
	resp, err := base.RoundTrip(r)
	if err == nil && r.Method == http.MethodPost {
		errorAsAnswer(r, resp)
		asEventStream(r, resp, h.maxFrame)
	}
	if err == nil && strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		if rec, ok := r.Context().Value(callKey{}).(*callRec); ok { // a call's stream (the standalone one keeps its delay)
			resp.Body = &retryCap{ReadCloser: resp.Body, asked: func(d time.Duration) { rec.retry = d }}
		}
		if h.order != nil {
			resp.Body = &sseCounter{ReadCloser: resp.Body, o: h.order, max: h.maxFrame}
		}
	}
	return resp, err
}

// origin is u's scheme://host:port, the port spelled out.
func origin(u *url.URL) string {
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + strings.ToLower(u.Hostname()) + ":" + port
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// oneLine shortens s to one line of at most n bytes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		s = s[:n] + "…"
	}
	return s
}

// safe is msg with the server's URL (which the SDK's errors quote) in its
// recordable form.
func (s *Server) safe(msg string) string {
	if s.cfg.URL == "" {
		return msg
	}
	msg = strings.ReplaceAll(msg, s.cfg.URL, events.SafeURL(s.cfg.URL))
	if u, err := url.Parse(s.cfg.URL); err == nil {
		for _, seg := range strings.Split(u.Path, "/") {
			if events.SafeURL("http://h/"+seg) != "http://h/"+seg {
				msg = strings.ReplaceAll(msg, seg, "REDACTED")
			}
		}
		for _, vs := range u.Query() {
			for _, v := range vs {
				if v != "" {
					msg = strings.ReplaceAll(msg, v, "REDACTED")
				}
			}
		}
	}
	return msg
}
