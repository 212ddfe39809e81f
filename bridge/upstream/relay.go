//lint:file-ignore SA1019 sampling, elicitation's relay, roots and logging are deprecated in 2026-07-28 but in their window: the gateway relays what clients and servers still speak (issue 25)

package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// newClient is the go-sdk client of link l. It declares exactly the
// capabilities l's client session declared (sampling, elicitation, roots;
// the shared link declares sampling and elicitation and answers for the
// client whose call is in flight), carries that session's roots, and
// relays what the upstream asks and tells to that session alone.
func (l *link) newClient(ctx context.Context) *sdk.Client {
	s := l.s
	opts := &sdk.ClientOptions{
		Capabilities:                &sdk.ClientCapabilities{},
		ToolListChangedHandler:      handled(l, l.onToolListChanged),
		ProgressNotificationHandler: handled(l, s.onProgress),
		LoggingMessageHandler:       handled(l, l.onLog),
		ResourceUpdatedHandler:      handled(l, l.onResourceUpdated),
		ResourceListChangedHandler:  handled(l, func(context.Context, *sdk.ResourceListChangedRequest) { l.relist() }),
		PromptListChangedHandler:    handled(l, func(context.Context, *sdk.PromptListChangedRequest) { l.relist() }),
		ElicitationHandler:          l.onElicit,
		CreateMessageHandler:        l.onCreateMessage,
	}
	if l.version >= newProtocol {
		// A server's input requests go back to the client that asked, in
		// the result (its retry brings the answers): the SDK must not
		// answer them itself.
		opts.MultiRoundTrip = &sdk.MultiRoundTripOptions{Disabled: true}
	}
	var roots []*sdk.Root
	if l.owner != nil {
		caps := l.owner.Capabilities()
		if caps == nil {
			caps = &sdk.ClientCapabilities{}
		}
		opts.Capabilities = &sdk.ClientCapabilities{Sampling: caps.Sampling, Elicitation: caps.Elicitation}
		if caps.Sampling == nil {
			opts.CreateMessageHandler = nil
		} else if caps.Sampling.Tools != nil {
			opts.CreateMessageHandler, opts.CreateMessageWithToolsHandler = nil, l.onCreateMessageWithTools
		}
		if caps.Elicitation == nil {
			opts.ElicitationHandler = nil
		}
		if caps.RootsV2 != nil {
			opts.Capabilities.RootsV2 = &sdk.RootCapabilities{ListChanged: true}
			roots = l.asked
			if !l.rootsAsked {
				roots = l.ownerRoots(ctx)
			}
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "tracebridge", Version: s.g.opts.Version}, opts)
	l.roots = uris(roots)
	if len(roots) > 0 {
		c.AddRoots(roots...)
	}
	l.client = c
	return c
}

func uris(roots []*sdk.Root) []string {
	var out []string
	for _, r := range roots {
		out = append(out, r.URI)
	}
	return out
}

// handled is h, counted as done on l when it returns (order.go).
func handled[R any](l *link, h func(context.Context, R)) func(context.Context, R) {
	return func(ctx context.Context, r R) {
		defer l.order.done()
		h(ctx, r)
	}
}

// ownerRoots asks l's client session for its roots (none when it does not
// answer within a second).
func (l *link) ownerRoots(ctx context.Context) []*sdk.Root {
	rctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	roots, err := l.owner.Roots(rctx)
	if err != nil {
		l.s.g.opts.Logger.Debug("the client's roots could not be read for an upstream", "server", l.s.name, "err", err)
		return nil
	}
	return roots
}

// RootsChanged gives the links of ctx's client session its roots anew
// (the go-sdk client tells each upstream roots/list_changed).
func (g *Gateway) RootsChanged(ctx context.Context) {
	for _, l := range g.linksOf(ctx) {
		if l.client == nil {
			continue
		}
		go func() {
			roots := l.ownerRoots(context.WithoutCancel(ctx))
			l.mu.Lock()
			old := l.roots
			l.roots = uris(roots)
			l.mu.Unlock()
			l.client.RemoveRoots(old...)
			l.client.AddRoots(roots...)
		}()
	}
}

// linksOf are the links ctx's client session owns.
func (g *Gateway) linksOf(ctx context.Context) []*link {
	d := downstreamOf(ctx)
	if d == nil || d.Key() == "" {
		return nil
	}
	var out []*link
	for _, name := range g.names {
		s := g.servers[name]
		s.mu.Lock()
		if l := s.links[d.Key()]; l != nil && l.owner != nil {
			out = append(out, l)
		}
		s.mu.Unlock()
	}
	return out
}

// relay sends what the upstream asked (method, params) to the client
// session it belongs to and returns that client's answer, each recorded
// under the request in flight. A client that did not declare the
// capability, or no client at all, gets the upstream a JSON-RPC error at
// once.
func relay[P, R any](l *link, ctx context.Context, method string, params P, capable func(*sdk.ClientCapabilities) bool,
	ask func(context.Context, Downstream) (R, error)) (R, error) {
	var zero R
	s := l.s
	d, req, op := l.target()
	b, _ := json.Marshal(params)
	t0 := s.g.opts.Now()
	s.emit(events.KindUpstreamAsked, req, op, events.OK, "", zeroTime, events.A("method", method, AttrRequest, string(b)))
	if d == nil || !capable(d.Capabilities()) {
		msg := fmt.Sprintf("server %s asked for %s, which the client session does not offer", s.name, method)
		if d == nil {
			msg = fmt.Sprintf("server %s asked for %s with no client call in flight to relay it to", s.name, method)
		}
		s.emit(events.KindUpstreamAnswered, req, op, events.Unavailable, events.CodeClientIncapable, t0, events.A("method", method, "error", msg))
		return zero, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: msg}
	}
	res, err := ask(d.Related(ctx, req), d)
	if err != nil {
		code := events.CodeClientError
		if ctx.Err() != nil {
			code = events.CodeCancelled
		}
		s.emit(events.KindUpstreamAnswered, req, op, events.OutcomeOf(code), code, t0, events.A("method", method, "error", oneLine(s.g.redact(err.Error()), 500)))
		return zero, err
	}
	a, _ := json.Marshal(res)
	s.emit(events.KindUpstreamAnswered, req, op, events.OK, "", t0, events.A("method", method, AttrAnswer, string(a)))
	return res, nil
}

func (l *link) onCreateMessage(ctx context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
	return relay(l, ctx, "sampling/createMessage", r.Params, func(c *sdk.ClientCapabilities) bool { return c != nil && c.Sampling != nil },
		func(ctx context.Context, d Downstream) (*sdk.CreateMessageResult, error) {
			return d.CreateMessage(ctx, r.Params)
		})
}

func (l *link) onCreateMessageWithTools(ctx context.Context, r *sdk.CreateMessageWithToolsRequest) (*sdk.CreateMessageWithToolsResult, error) {
	return relay(l, ctx, "sampling/createMessage", r.Params, func(c *sdk.ClientCapabilities) bool { return c != nil && c.Sampling != nil },
		func(ctx context.Context, d Downstream) (*sdk.CreateMessageWithToolsResult, error) {
			return d.CreateMessageWithTools(ctx, r.Params)
		})
}

func (l *link) onElicit(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
	return relay(l, ctx, "elicitation/create", r.Params, func(c *sdk.ClientCapabilities) bool {
		if c == nil || c.Elicitation == nil {
			return false
		}
		return r.Params == nil || r.Params.Mode != "url" || c.Elicitation.URL != nil
	}, func(ctx context.Context, d Downstream) (*sdk.ElicitResult, error) { return d.Elicit(ctx, r.Params) })
}

// onLog records an upstream's log message and sends it to the client
// session it belongs to (the request in flight, else the link's owner),
// never to another.
func (l *link) onLog(ctx context.Context, req *sdk.LoggingMessageRequest) {
	if req == nil || req.Params == nil {
		return
	}
	s := l.s
	b, _ := json.Marshal(req.Params.Data)
	s.notification(&s.logs, "notifications/message", events.A("level", string(req.Params.Level), "logger", req.Params.Logger, "data", string(b)))
	d, reqID, _ := l.target()
	if d == nil {
		return
	}
	p := *req.Params
	if s.cfg.Prefixed() {
		if p.Logger == "" {
			p.Logger = s.name
		} else {
			p.Logger = s.name + "/" + p.Logger
		}
	}
	d.Log(d.Related(ctx, reqID), &p)
}

// level is the log level l asks of the upstream: its client's, else info
// (the log records the upstream's messages at info and above either way).
func (l *link) level() string {
	if l.owner != nil {
		if lv := l.owner.LogLevel(); lv != "" {
			return lv
		}
	}
	return "info"
}

// setLevel asks the upstream for log messages at level; a server without
// logging is not asked.
func (l *link) setLevel(ctx context.Context, level string) {
	if ir := l.sess.InitializeResult(); ir == nil || ir.Capabilities == nil || ir.Capabilities.Logging == nil {
		return
	}
	if err := l.sess.SetLoggingLevel(ctx, &sdk.SetLoggingLevelParams{Level: sdk.LoggingLevel(level)}); err != nil {
		l.s.g.opts.Logger.Debug("upstream refused a logging level", "server", l.s.name, "err", err)
	}
}

// SetLevel passes a client session's logging/setLevel to its links.
func (g *Gateway) SetLevel(ctx context.Context, level string) {
	for _, l := range g.linksOf(ctx) {
		l.setLevel(ctx, level)
	}
}

// onToolListChanged lists the upstream's tools again; the catalog and the
// clients follow (the MCP server tells them tools/list_changed). A flood
// of notifications makes at most one listing per refreshEvery.
func (l *link) onToolListChanged(context.Context, *sdk.ToolListChangedRequest) {
	s := l.s
	s.notification(&s.listChanged, "notifications/tools/list_changed", nil)
	l.relist()
}

// relist lists what the server offers again, on this link, coalescing
// what arrives within refreshEvery.
func (l *link) relist() {
	s := l.s
	if !s.refreshQueued.CompareAndSwap(false, true) {
		return // the queued listing will see this change too
	}
	go func() { // the handler runs on the connection's reader: never block it
		if wait := time.Until(time.Unix(0, s.lastRefresh.Load()).Add(refreshEvery)); wait > 0 {
			time.Sleep(wait)
		}
		s.refreshQueued.Store(false)
		s.lastRefresh.Store(time.Now().UnixNano())
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.links[l.key] != l {
			return // listed again when a session is (re)made
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout())
		defer cancel()
		if err := s.refreshLocked(ctx, events.ID{}, l.sess); err != nil {
			s.g.opts.Logger.Warn("upstream tools could not be listed again", "server", s.name, "err", err)
		}
	}()
}
