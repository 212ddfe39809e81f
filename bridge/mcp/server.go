package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/lineconn"
	"github.com/tracebridge/tracebridge/internal/stack"
)

// DefaultMaxLineLength caps one JSON-RPC line from the client. A longer line
// ends the session (recorded as mcp.session.aborted, TooLarge) instead of
// growing memory without bound.
const DefaultMaxLineLength = 4 << 20

// Emitter is what the server needs of events.Emitter.
type Emitter interface {
	events.Recorder
	FlushAll(ctx context.Context) error
	tagger
}

// Options configures New. Executor and Emitter are required.
type Options struct {
	Executor *executor.Executor
	Emitter  Emitter
	// Version is reported in serverInfo.
	Version string
	// MaxLineLength caps one inbound line. Zero: DefaultMaxLineLength.
	MaxLineLength int
	// FlushTimeout bounds the wait for a request's events before its
	// response is written. Zero: 10s.
	FlushTimeout time.Duration
	// Now is the clock for durations. Nil: time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Resources are served as MCP resource templates.
	Resources []Resource
	// Config is the tracebridge.toml text in force ("" for the defaults),
	// recorded (redacted) with mcp.session.started so an export carries it.
	Config string
	// BeforeList, when set, runs before tools/list is answered, and before
	// a call of a tool the catalog does not hold yet (the gateway connects
	// its lazy upstreams so their tools are there); req is the request's id.
	BeforeList func(ctx context.Context, req events.ID, method string)
	// BeforeCall, when set, runs before a call of a tool the catalog does
	// not have yet (instead of BeforeList): the gateway lists what its
	// pins hold and starts only the server the tool belongs to.
	BeforeCall func(ctx context.Context, req events.ID, tool string)
	// Passthrough, when set, offers upstream servers' prompts and
	// resources (the gateway); SyncTools serves them too.
	Passthrough Passthrough
}

// Passthrough is what the server needs of the gateway to pass upstream
// prompts and resources through, each fetch recorded under its request.
type Passthrough interface {
	Prompts() []*sdk.Prompt
	Resources() []*sdk.Resource
	ResourceTemplates() []*sdk.ResourceTemplate
	// GetPrompt and ReadResource take the client's params whole: a retry
	// carries its answers to the server's input requests.
	GetPrompt(ctx context.Context, req events.ID, p *sdk.GetPromptParams) (*sdk.GetPromptResult, error)
	ReadResource(ctx context.Context, req events.ID, p *sdk.ReadResourceParams) (*sdk.ReadResourceResult, error)
	Complete(ctx context.Context, req events.ID, p *sdk.CompleteParams) (*sdk.CompleteResult, error)
	Subscribe(ctx context.Context, req events.ID, uri string) error
	Unsubscribe(ctx context.Context, req events.ID, uri string) error
	// SetLevel, RootsChanged: ctx's client session set a log level, or
	// said its roots changed. Release: that session ended.
	SetLevel(ctx context.Context, level string)
	RootsChanged(ctx context.Context)
	Release(key string)
}

// Resource is a family of read-only resources, e.g. trace://runs/{requestId}.
type Resource struct {
	URITemplate, Name, Description, MIMEType string
	// Capability is what a read needs, granted by the same policy as the
	// tools (trace://runs/… needs trace.read, as trace_replay does).
	Capability string
	// Read returns the text of one resource; param is the template's
	// single variable, taken from the URI.
	Read func(ctx context.Context, param string) (string, error)
}

// Server is an MCP server over the executor's catalog.
type Server struct {
	opts Options
	sdk  *sdk.Server
	// registered is the catalog as last given to the SDK (id → tool), so
	// SyncTools adds and removes only what changed.
	regMu      sync.Mutex
	registered map[string]*executor.Tool
	passed     map[string]any // upstream prompts and resources served: kind + name/URI → what

	// roots caches each client session's declared roots (*ServerSession →
	// []string), dropped when the client says they changed.
	roots sync.Map
	// clients are the open client sessions by key (their session event
	// id), as the gateway relays to them.
	clients sync.Map
	// codes hands each call's result code from the handler to the
	// connection that writes its response (request id → events.Code), so
	// the code travels by value, never re-read from the result's JSON.
	codes sync.Map
}

// New builds the server: one MCP tool per catalog entry, all run through
// the executor, plus middleware that answers unknown tools with the
// executor's UnknownTool result and turns any panic into a structured error.
func New(opts Options) *Server {
	if opts.MaxLineLength <= 0 {
		opts.MaxLineLength = DefaultMaxLineLength
	}
	if opts.FlushTimeout <= 0 {
		opts.FlushTimeout = 10 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	s := &Server{opts: opts}
	sopts := &sdk.ServerOptions{
		Logger: opts.Logger,
		//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; they pick the workspace (issue 18)
		RootsListChangedHandler: s.rootsChanged,
		Capabilities:            capabilities(opts),
		Instructions:            "Every call is recorded as evidence. Each tool result's _meta[\"" + MetaRequestID + "\"] names the request; `tracebridge tail --request ID` shows what happened.",
	}
	if pt := opts.Passthrough; pt != nil {
		sopts.SubscribeHandler = func(ctx context.Context, req *sdk.SubscribeRequest) error {
			return policyError(pt.Subscribe(hopContext(ctx, req.GetExtra()), requestOf(req.GetExtra()), req.Params.URI))
		}
		sopts.UnsubscribeHandler = func(ctx context.Context, req *sdk.UnsubscribeRequest) error {
			return policyError(pt.Unsubscribe(hopContext(ctx, req.GetExtra()), requestOf(req.GetExtra()), req.Params.URI))
		}
		sopts.CompletionHandler = func(ctx context.Context, req *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			res, err := pt.Complete(hopContext(ctx, req.GetExtra()), requestOf(req.GetExtra()), req.Params)
			return res, policyError(err)
		}
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "tracebridge", Version: opts.Version}, sopts)
	s.SyncTools()
	for _, r := range opts.Resources {
		prefix := r.URITemplate[:strings.Index(r.URITemplate, "{")]
		s.sdk.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: r.URITemplate, Name: r.Name, Description: r.Description, MIMEType: r.MIMEType},
			func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				uri := req.Params.URI
				if !strings.HasPrefix(uri, prefix) {
					return nil, sdk.ResourceNotFoundError(uri)
				}
				if err := s.authorize(ctx, requestOf(req.GetExtra()), uri, r.Capability); err != nil {
					return nil, err
				}
				text, err := r.Read(ctx, strings.TrimPrefix(uri, prefix))
				if err != nil {
					return nil, err
				}
				return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: r.MIMEType, Text: text}}}, nil
			})
	}
	s.sdk.AddReceivingMiddleware(s.recoverPanics, s.withClient, s.unknownTools, s.beforeList)
	return s
}

// SyncTools makes the tools the SDK serves the executor's catalog: tools
// added or changed in the catalog are (re)registered, removed ones dropped.
// The SDK tells connected clients notifications/tools/list_changed.
func (s *Server) SyncTools() {
	s.regMu.Lock()
	defer s.regMu.Unlock()
	if s.registered == nil {
		s.registered = map[string]*executor.Tool{}
	}
	seen := map[string]bool{}
	for _, t := range s.opts.Executor.Catalog().Tools() {
		seen[t.ID] = true
		if s.registered[t.ID] == t {
			continue
		}
		var schema any = t.InputSchema
		if t.RawSchema != nil {
			schema = t.RawSchema
		}
		if err := addTool(s.sdk, listed(t, schema), s.handle); err != nil {
			s.opts.Logger.Warn("tool not served", "tool", t.ID, "err", err)
			continue
		}
		s.registered[t.ID] = t
	}
	var gone []string
	for id := range s.registered {
		if !seen[id] {
			gone = append(gone, id)
			delete(s.registered, id)
		}
	}
	if len(gone) > 0 {
		s.sdk.RemoveTools(gone...)
	}
	if s.opts.Passthrough != nil {
		s.syncPassthrough()
	}
}

// listed is the MCP tool clients are shown for t: its Listing (an
// upstream's descriptor as pinned: title, output schema and annotations
// as the server sent them) under its id, else one built from its
// descriptor.
func listed(t *executor.Tool, schema any) *sdk.Tool {
	if len(t.Listing) > 0 {
		var up sdk.Tool
		if err := json.Unmarshal(t.Listing, &up); err == nil {
			up.Name = t.ID
			up.InputSchema = schema
			return &up
		}
	}
	return &sdk.Tool{Name: t.ID, Description: t.Description, InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{ReadOnlyHint: !t.SideEffects}}
}

// syncPassthrough serves the upstreams' prompts, resources and templates
// as last listed. s.regMu is held.
func (s *Server) syncPassthrough() {
	pt := s.opts.Passthrough
	if s.passed == nil {
		s.passed = map[string]any{}
	}
	seen := map[string]bool{}
	reqOf := requestOf
	put := func(k string, v any, add func()) {
		seen[k] = true
		if s.passed[k] != v {
			s.passed[k] = v
			safely(s.opts.Logger, k, add)
		}
	}
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		res, err := pt.ReadResource(hopContext(ctx, req.GetExtra()), reqOf(req.GetExtra()), req.Params)
		return res, policyError(err)
	}
	for _, p := range pt.Prompts() {
		put("prompt "+p.Name, p, func() {
			s.sdk.AddPrompt(p, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				res, err := pt.GetPrompt(hopContext(ctx, req.GetExtra()), reqOf(req.GetExtra()), req.Params)
				return res, policyError(err)
			})
		})
	}
	for _, r := range pt.Resources() {
		put("resource "+r.URI, r, func() { s.sdk.AddResource(r, read) })
	}
	for _, t := range pt.ResourceTemplates() {
		put("template "+t.URITemplate, t, func() { s.sdk.AddResourceTemplate(t, read) })
	}
	for k := range s.passed {
		if seen[k] {
			continue
		}
		delete(s.passed, k)
		kind, name, _ := strings.Cut(k, " ")
		switch kind {
		case "prompt":
			s.sdk.RemovePrompts(name)
		case "resource":
			s.sdk.RemoveResources(name)
		case "template":
			s.sdk.RemoveResourceTemplates(name)
		}
	}
}

// requestOf is the request id the evidence connection gave a request.
// hopContext is ctx carrying the traceparent the client sent with the
// request of ex, for the upstream hop it makes.
func hopContext(ctx context.Context, ex *sdk.RequestExtra) context.Context {
	if ex == nil || ex.Header == nil {
		return ctx
	}
	return events.WithTraceparent(ctx, ex.Header.Get(hdrTraceparent))
}

func requestOf(ex *sdk.RequestExtra) events.ID {
	var id events.ID
	if ex != nil && ex.Header != nil {
		id, _ = events.ParseID(ex.Header.Get(hdrRequestID))
	}
	return id
}

// authorize asks the executor's policy whether the request may read or
// get id, which needs capability; a denial is a JSON-RPC error (a resource
// read has no tool result) whose message starts with the code.
func (s *Server) authorize(ctx context.Context, req events.ID, id, capability string) error {
	if capability == "" {
		return nil
	}
	return policyError(s.opts.Executor.Authorize(ctx, req, id, []string{capability}))
}

// policyError turns a policy denial (PolicyDenied, ConfigInvalid) into the
// JSON-RPC error a client sees; other errors pass unchanged.
func policyError(err error) error {
	var r executor.Relayed
	if errors.As(err, &r) {
		return relayed(r)
	}
	var e *events.Err
	if errors.As(err, &e) && (e.Code == events.CodePolicyDenied || e.Code == events.CodeConfigInvalid) {
		return &jsonrpc.Error{Code: CodePolicyRefused, Message: string(e.Code) + ": " + e.Msg}
	}
	return err
}

// relayed is the JSON-RPC error an upstream answered, as it sent it.
func relayed(r executor.Relayed) *jsonrpc.Error {
	code, msg, data := r.Relay()
	return &jsonrpc.Error{Code: code, Message: msg, Data: data}
}

// CodePolicyRefused is the JSON-RPC error code of a resource read or prompt
// the policy denies (tool calls answer a tool result instead).
const CodePolicyRefused = -32003

// safely runs an SDK registration whose panic (an upstream's prompt or URI
// it refuses) must not take the bridge down.
func safely(log *slog.Logger, what string, f func()) {
	defer func() {
		if r := recover(); r != nil {
			log.Warn("not served", "what", what, "err", fmt.Sprint(r))
		}
	}()
	f()
}

// addTool is the SDK's AddTool, whose panics (a schema it refuses) become
// an error: an upstream's descriptor must not take the bridge down.
func addTool(srv *sdk.Server, t *sdk.Tool, h sdk.ToolHandler) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	srv.AddTool(t, h)
	return nil
}

// rootsChanged forgets the client's roots and gives the gateway the new
// ones.
func (s *Server) rootsChanged(ctx context.Context, req *sdk.RootsListChangedRequest) {
	s.roots.Delete(req.Session)
	if s.opts.Passthrough == nil {
		return
	}
	s.clients.Range(func(_, v any) bool {
		if c := v.(*clientSession); c.session() == req.Session {
			s.opts.Passthrough.RootsChanged(executor.WithClient(ctx, c))
			return false
		}
		return true
	})
}

// beforeList runs the BeforeList hook ahead of tools/list.
func (s *Server) beforeList(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if s.opts.BeforeList != nil && (method == "tools/list" || strings.HasPrefix(method, "prompts/") || strings.HasPrefix(method, "resources/") || method == "completion/complete") {
			var id events.ID
			if ex := req.GetExtra(); ex != nil && ex.Header != nil {
				id, _ = events.ParseID(ex.Header.Get(hdrRequestID))
			}
			s.opts.BeforeList(ctx, id, method)
		}
		res, err := next(ctx, method, req)
		if method == "tools/list" && err == nil {
			s.offeredOnly(req, res)
		}
		return res, err
	}
}

// Serve runs one session over r and w until the client closes r, the
// session fails, or ctx ends. Every event is flushed before it returns,
// except a stateless request's session end (see below).
func (s *Server) Serve(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	c := &connState{rec: s.opts.Emitter, log: s.opts.Logger, session: s.opts.Emitter.NewID(), codeOf: s.codeOf,
		flushTimeout: s.opts.FlushTimeout, now: s.opts.Now, inflight: map[string]*pending{}, transport: "pipe"}
	if overHTTP(ctx) {
		c.transport = "tcp"
	}
	if u, ok := identity.From(ctx); ok { // every event of the session and its requests names who made them
		c.user, c.tags = u.Attrs(), s.opts.Emitter
		s.opts.Emitter.Tag(c.session, c.user...)
		defer s.opts.Emitter.Untag(c.session)
		defer c.untagRequests()
	}
	// The configuration in force, whole (a payload when long; "" for the
	// defaults): what a session export re-drives with.
	started := events.Event{Kind: events.KindMCPSessionStarted, SessionID: c.session, Outcome: events.OK,
		Attrs: events.A("config", s.opts.Config)}
	s.opts.Emitter.Emit(started)
	out := &lockedWriter{w: w}
	one, _ := ctx.Value(oneRequestKey{}).(bool)
	buffer := lineBuffer
	if one {
		buffer = oneLineBuffer
	}
	in := newLineGuard(r, s.opts.MaxLineLength, buffer, func(id json.RawMessage, method, msg string) { c.refuseRaw(out, id, method, msg) })
	// The line guard caps each line; the connection decodes each message
	// once (internal/lineconn) and answers a batch message by message.
	t := &evidenceTransport{inner: &lineconn.Transport{Reader: readCloser{in, r}, Writer: out, Batches: true}, c: c}
	cs := &clientSession{key: c.session.String(), conn: c}
	if one {
		cs.key = ""
	}
	c.related, c.poll = relatedOf(ctx), pollOf(ctx)
	s.clients.Store(c.session.String(), cs)
	err := s.sdk.Run(ctx, t)
	s.clients.Delete(c.session.String())
	if ss := cs.session(); ss != nil {
		s.roots.Delete(ss) // kept, it held the ended session and its buffers (4 MiB) for ever
	}
	if s.opts.Passthrough != nil && cs.key != "" {
		s.opts.Passthrough.Release(cs.key)
	}
	c.endSession(io.EOF) // a no-op when Read already recorded why it stopped
	if one {
		// A stateless request's answer waited for its own events; the
		// session's end rides with the emitter's next batch (within its
		// linger) instead of a durable point of its own that the HTTP
		// handler would wait for.
		return err
	}
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.FlushTimeout)
	defer cancel()
	if ferr := s.opts.Emitter.FlushAll(fctx); ferr != nil {
		s.opts.Logger.Error("session events not durable", "err", ferr)
	}
	return err
}

// handle runs a tools/call through the executor.
func (s *Server) handle(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	inv := executor.Invocation{Tool: req.Params.Name, Args: rawArgs(req.Params.Arguments)}
	inv.User, _ = identity.From(ctx)
	if len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" { // a retry with the answers its server asked for
		inv.Round.Responses, _ = json.Marshal(req.Params.InputResponses)
		inv.Round.State = req.Params.RequestState
	}
	if ex := req.GetExtra(); ex != nil && ex.Header != nil {
		inv.RequestID, _ = events.ParseID(ex.Header.Get(hdrRequestID))
		inv.SessionID, _ = events.ParseID(ex.Header.Get(hdrSessionID))
		inv.Traceparent = ex.Header.Get(hdrTraceparent)
		inv.Transport = ex.Header.Get(hdrTransport)
	}
	if ss := req.Session; ss != nil {
		if ip := ss.InitializeParams(); ip != nil && ip.ClientInfo != nil {
			inv.Client = ip.ClientInfo.Name + "/" + ip.ClientInfo.Version
		}
		ctx = executor.WithClientRoots(ctx, s.clientRoots(ctx, ss, inv))
		if tok := req.Params.GetProgressToken(); tok != nil {
			inv.Progress = func(progress, total float64, message string) {
				ss.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: progress, Total: total, Message: message})
			}
		}
	}
	res := s.opts.Executor.Execute(ctx, inv)
	s.setCode(ctx, inv.RequestID, res.Code)
	if res.Relayed != nil { // the server's own JSON-RPC error, as it sent it
		return nil, relayed(res.Relayed)
	}
	out := toResult(res)
	if out.IsError && s.declaresOutput(inv.Tool) {
		// A client checks structured content against the tool's output
		// schema even on an error (the TypeScript SDK throws -32602): the
		// error travels in _meta and the text only.
		out.StructuredContent = nil
	}
	return out, nil
}

// clientRoots are the roots the client of ss declared (asked once per
// session, again after notifications/roots/list_changed); none when the
// client has no roots capability or does not answer within a second.
// Asking is a crossing (mcp.roots.listed, in the run of the call that
// asked, with the roots): the roots choose the workspace host.
func (s *Server) clientRoots(ctx context.Context, ss *sdk.ServerSession, inv executor.Invocation) []string {
	if v, ok := s.roots.Load(ss); ok {
		return v.([]string)
	}
	var out []string
	//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; they pick the workspace (issue 18)
	if ip := ss.InitializeParams(); ip != nil && ip.Capabilities != nil && ip.Capabilities.RootsV2 != nil {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		e := events.Event{Kind: events.KindMCPRootsListed, RequestID: inv.RequestID, SessionID: inv.SessionID, Traceparent: inv.Traceparent, Outcome: events.OK}
		//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; they pick the workspace (issue 18)
		if res, err := ss.ListRoots(rctx, nil); err == nil {
			for _, r := range res.Roots {
				out = append(out, r.URI)
			}
			b, _ := json.Marshal(out)
			e.Attrs = events.A("roots", string(b))
		} else {
			// Not a failure of the call: it goes on without roots.
			e.Attrs = events.A("error", truncate(err.Error(), 300))
		}
		s.opts.Emitter.Emit(e)
	}
	s.roots.Store(ss, out)
	return out
}

// setCode records the code of request req's result for its response.
func (s *Server) setCode(_ context.Context, req events.ID, code events.Code) {
	if !req.IsZero() {
		s.codes.Store(req, code)
	}
}

// codeOf takes the code the handler recorded for req.
func (s *Server) codeOf(req events.ID) (events.Code, bool) {
	v, ok := s.codes.LoadAndDelete(req)
	if !ok {
		return "", false
	}
	return v.(events.Code), true
}

func rawArgs(a any) json.RawMessage {
	switch v := a.(type) {
	case json.RawMessage:
		return v
	case nil:
		return nil
	default:
		b, _ := json.Marshal(v)
		return b
	}
}

// recoverPanics keeps the bridge alive whatever panics below it.
func (s *Server) recoverPanics(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
		stack.Grow() // the first frame of the request's goroutine that is ours
		defer func() {
			if r := recover(); r != nil {
				s.opts.Logger.Error("panic while handling a request", "method", method, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
				if method == "tools/call" {
					if call, ok := req.(*sdk.CallToolRequest); ok {
						if ex := call.GetExtra(); ex != nil && ex.Header != nil {
							id, _ := events.ParseID(ex.Header.Get(hdrRequestID))
							s.setCode(ctx, id, events.CodeToolPanic)
						}
					}
					res, err = toResult(executor.Result{Code: events.CodeToolPanic, Message: "internal error while handling the call"}), nil
					return
				}
				res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			}
		}()
		return next(ctx, method, req)
	}
}

func capabilities(opts Options) *sdk.ServerCapabilities {
	c := &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}}
	if opts.BeforeList != nil { // a gateway: upstreams change the catalog while a session runs
		c.Tools.ListChanged = true
	}
	if opts.Passthrough != nil {
		c.Prompts = &sdk.PromptCapabilities{ListChanged: true}
		c.Resources = &sdk.ResourceCapabilities{ListChanged: true, Subscribe: true}
		c.Completions = &sdk.CompletionCapabilities{}
	}
	if len(opts.Resources) > 0 && c.Resources == nil {
		c.Resources = &sdk.ResourceCapabilities{}
	}
	return c
}
