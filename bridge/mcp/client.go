//lint:file-ignore SA1019 sampling, elicitation's relay, roots and logging are deprecated in 2026-07-28 but in their window: the gateway relays what clients and servers still speak (issue 25)

package mcp

import (
	"context"
	"encoding/json"
	"reflect"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
)

// clientSession is one client session of the bridge as the gateway relays
// to it (upstream.Downstream): what an upstream asks of or tells this
// client reaches this session and no other. Its key is the session's
// event id.
type clientSession struct {
	key  string // "" for a session of one request (the HTTP front door's sessionless path)
	conn *connState

	mu    sync.Mutex
	ss    *sdk.ServerSession
	level string // the level of the client's logging/setLevel
}

func (c *clientSession) Key() string { return c.key }

func (c *clientSession) session() *sdk.ServerSession {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ss
}

func (c *clientSession) Capabilities() *sdk.ClientCapabilities {
	if ss := c.session(); ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.Capabilities
		}
	}
	return nil
}

func (c *clientSession) ProtocolVersion() string {
	if ss := c.session(); ss != nil {
		if ip := ss.InitializeParams(); ip != nil {
			return ip.ProtocolVersion
		}
	}
	return ""
}

func (c *clientSession) Roots(ctx context.Context) ([]*sdk.Root, error) {
	res, err := c.session().ListRoots(ctx, nil)
	if err != nil {
		return nil, err
	}
	return res.Roots, nil
}

func (c *clientSession) CreateMessage(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	return c.session().CreateMessage(ctx, p)
}

func (c *clientSession) CreateMessageWithTools(ctx context.Context, p *sdk.CreateMessageWithToolsParams) (*sdk.CreateMessageWithToolsResult, error) {
	return c.session().CreateMessageWithTools(ctx, p)
}

func (c *clientSession) Elicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	return c.session().Elicit(ctx, p)
}

func (c *clientSession) Log(ctx context.Context, p *sdk.LoggingMessageParams) {
	if ss := c.session(); ss != nil {
		ss.Log(ctx, p) // the SDK sends it when the client's level lets it through
	}
}

func (c *clientSession) LogLevel() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.level
}

// ResourceUpdated tells this client alone that a resource it subscribed
// to changed (the SDK's own ResourceUpdated tells every subscriber, and
// each client subscribed on its own upstream link).
func (c *clientSession) ResourceUpdated(ctx context.Context, p *sdk.ResourceUpdatedNotificationParams) {
	raw, err := json.Marshal(p)
	if err != nil {
		return
	}
	c.conn.inner.Write(ctx, &jsonrpc.Request{Method: "notifications/resources/updated", Params: raw})
}

type relatedKey struct{}

// RelatedFunc is told, as the bridge sends the client a request (id
// out) that belongs to a request the client sent (id in), both JSON-RPC
// ids as JSON.
type RelatedFunc func(out, in json.RawMessage)

type relatedHookKey struct{}

// withRelated returns ctx for Serve: f hears of every request the
// session sends the client that belongs to one of the client's requests.
func withRelated(ctx context.Context, f RelatedFunc) context.Context {
	return context.WithValue(ctx, relatedHookKey{}, f)
}

type oneRequestKey struct{}

// withOneRequest marks ctx for Serve: the session carries one request (a
// sessionless HTTP request), so it owns no upstream links; the gateway's
// shared link carries its calls.
func withOneRequest(ctx context.Context) context.Context {
	return context.WithValue(ctx, oneRequestKey{}, true)
}

type overHTTPKey struct{}

// withHTTP marks ctx for Serve: the session's client reaches it over
// Streamable HTTP (its requests record transport "tcp", not "pipe").
func withHTTP(ctx context.Context) context.Context {
	return context.WithValue(ctx, overHTTPKey{}, true)
}

func overHTTP(ctx context.Context) bool {
	v, _ := ctx.Value(overHTTPKey{}).(bool)
	return v
}

type pollHookKey struct{}

// PollFunc hears that the server of a call the client sent (id in, as
// JSON; req, its request id) ended its event stream before answering, so
// the front door asks its client to come back the same way, after retry
// (0: as it was told at the stream's start); the channel is closed when
// the client has (nil: the call has no such stream).
type PollFunc func(in json.RawMessage, req events.ID, retry time.Duration) <-chan struct{}

// withPoll returns ctx for Serve with f.
func withPoll(ctx context.Context, f PollFunc) context.Context {
	return context.WithValue(ctx, pollHookKey{}, f)
}

func pollOf(ctx context.Context) PollFunc {
	f, _ := ctx.Value(pollHookKey{}).(PollFunc)
	return f
}

func relatedOf(ctx context.Context) RelatedFunc {
	f, _ := ctx.Value(relatedHookKey{}).(RelatedFunc)
	return f
}

// Related marks ctx: a request the bridge sends the client with it belongs
// to request req (the HTTP front door sends it on req's stream).
func (c *clientSession) Related(ctx context.Context, req events.ID) context.Context {
	if req.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, relatedKey{}, req)
}

// withClient is the middleware that gives every request's context its
// client session (executor.ClientOf), keeps the session's log level, and
// tells the gateway of a new level and of changed roots.
func (s *Server) withClient(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		var id, reqID string
		if ex := req.GetExtra(); ex != nil && ex.Header != nil {
			id, reqID = ex.Header.Get(hdrSessionID), ex.Header.Get(hdrRequestID)
		}
		v, ok := s.clients.Load(id)
		if !ok {
			return next(ctx, method, req)
		}
		c := v.(*clientSession)
		if ss, ok := req.GetSession().(*sdk.ServerSession); ok {
			c.mu.Lock()
			c.ss = ss
			c.mu.Unlock()
		}
		ctx = executor.WithClient(ctx, c)
		if req, err := events.ParseID(reqID); c.conn.poll != nil && err == nil {
			ctx = executor.WithPolled(ctx, func(retry time.Duration) <-chan struct{} { return c.conn.polled(req, retry) })
		}
		if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() { // a request without params holds a typed nil
			if caps, ok := p.GetMeta()[sdk.MetaKeyClientCapabilities]; ok {
				if b, err := json.Marshal(caps); err == nil {
					ctx = executor.WithDeclared(ctx, b) // this request's own, over a session's first
				}
			}
		}
		res, err := next(ctx, method, req)
		if p, ok := req.GetParams().(*sdk.SetLoggingLevelParams); ok && err == nil && p != nil {
			c.mu.Lock()
			c.level = string(p.Level)
			c.mu.Unlock()
			if s.opts.Passthrough != nil {
				s.opts.Passthrough.SetLevel(ctx, string(p.Level))
			}
		}
		return res, err
	}
}
