package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// evidenceTransport wraps the transport to an upstream so the bridge sees
// what the SDK's client does not expose: the JSON-RPC id of each request it
// sends (recorded as upstream.request.sent for the call that sent it) and
// why the connection broke (garbage, an oversized frame).
type evidenceTransport struct {
	inner sdk.Transport
	l     *link
}

func (t *evidenceTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ec := &evidenceConn{Connection: c, s: t.l.s, l: t.l}
	t.l.conn = ec // under s.mu: connect runs inside session
	return ec, nil
}

type evidenceConn struct {
	sdk.Connection
	s *Server
	l *link

	mu      sync.Mutex
	broken  string // why reading failed ("" while it works or after a clean EOF)
	closing bool
	// The results of tools/call requests as the server sent them, by
	// JSON-RPC id, from the read until the call takes them: recorded as
	// they came, not decoded and encoded again.
	awaiting map[string]bool
	results  map[string]json.RawMessage
}

// takeResult returns (and forgets) the result the server sent for the
// tools/call with JSON-RPC id rpcID; nil when there is none (an error, a
// connection not wrapped, an answer not read yet).
func (c *evidenceConn) takeResult(rpcID string) json.RawMessage {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.results[rpcID]
	delete(c.results, rpcID)
	delete(c.awaiting, rpcID)
	return r
}

// callKey carries a call's evidence to the connection's Write.
type callKey struct{}

// callRec is what a request's upstream.request.sent names.
type callRec struct {
	req, op events.ID
	tool    string
	rpcID   string
	// span is the id of the call's upstream.request.sent, chosen before the
	// request is built: its traceparent names that event's span (zero: the
	// emitter's own id). A request sent again gets a fresh id.
	span events.ID
	// written, when set, is called as the request goes to the transport
	// (it releases the server's write gate).
	written func()
	// retry is the delay the server last asked for on the call's stream
	// (retryCap told the SDK less; resumed waits the rest).
	retry time.Duration
}

func (c *evidenceConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		id := fmt.Sprint(r.ID.Raw())
		if r.Method == "tools/call" {
			c.mu.Lock()
			if c.awaiting == nil {
				c.awaiting, c.results = map[string]bool{}, map[string]json.RawMessage{}
			}
			c.awaiting[id] = true
			c.mu.Unlock()
		}
		c.s.sent(ctx, r.Method, id)
	}
	return c.Connection.Write(ctx, msg)
}

// sent records that the request of ctx's call (if any) goes to the
// upstream with JSON-RPC id rpcID, and releases the call's write gate: its
// check holds until here, just before the transport's write (which over
// HTTP lasts as long as the answer's stream, so calls do not queue behind
// one another).
func (s *Server) sent(ctx context.Context, method, rpcID string) {
	rec, ok := ctx.Value(callKey{}).(*callRec)
	if !ok {
		return
	}
	rec.rpcID = rpcID
	id := rec.span
	rec.span = events.ID{}
	s.emitAs(id, events.KindUpstreamRequestSent, rec.req, rec.op, events.OK, "", zeroTime, events.A("method", method, "rpcId", rpcID, projections.AttrUpTool, rec.tool))
	if rec.written != nil {
		rec.written()
	}
}

// sentOverHTTP is sent for a Streamable HTTP upstream, whose connection
// is not wrapped (the SDK's own connection keeps the hook that sends
// MCP-Protocol-Version and opens the GET stream the server sends its
// requests on): the request is read from the POST's body.
func (s *Server) sentOverHTTP(r *http.Request) {
	if r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") != "" {
		s.resumed(r)
		return
	}
	if r.Method != http.MethodPost || r.GetBody == nil {
		return
	}
	if _, ok := r.Context().Value(callKey{}).(*callRec); !ok {
		return
	}
	body, err := r.GetBody()
	if err != nil {
		return
	}
	defer body.Close()
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.NewDecoder(body).Decode(&m) != nil || m.Method == "" || len(m.ID) == 0 {
		return
	}
	id := string(m.ID)
	var v any
	if json.Unmarshal(m.ID, &v) == nil {
		id = fmt.Sprint(v)
	}
	s.sent(r.Context(), m.Method, id)
}

// resumed records that the SDK comes back for a call's answer with
// Last-Event-ID: the server ended the call's event stream before answering
// (SEP-1699 polling, or a broken connection). The call's client is asked
// to come back the same way (executor.WithPolled). The server's retry
// delay is kept here (the SDK was told maxRetryMs): the request goes when
// the delay is over or, sooner, when the client comes back to the gateway
// — the server sees the client's own return.
func (s *Server) resumed(r *http.Request) {
	rec, ok := r.Context().Value(callKey{}).(*callRec)
	if !ok {
		return
	}
	var back <-chan struct{}
	if f := executor.PolledOf(r.Context()); f != nil {
		back = f(rec.retry)
	}
	if wait := rec.retry - maxRetryMs*time.Millisecond; wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-back:
		case <-r.Context().Done():
		}
		t.Stop()
	}
	s.emitAs(events.ID{}, events.KindUpstreamResumed, rec.req, rec.op, events.OK, "", zeroTime,
		events.A("rpcId", rec.rpcID, "lastEventId", oneLine(r.Header.Get("Last-Event-ID"), 128), projections.AttrUpTool, rec.tool))
}

func (c *evidenceConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if r, ok := msg.(*jsonrpc.Request); ok && !r.IsCall() {
		c.l.order.noted(r.Method)
	}
	if r, ok := msg.(*jsonrpc.Response); ok && r.Error == nil {
		id := fmt.Sprint(r.ID.Raw())
		c.mu.Lock()
		if c.awaiting[id] {
			delete(c.awaiting, id)
			c.results[id] = r.Result
		}
		c.mu.Unlock()
	}
	if err != nil && !errors.Is(err, io.EOF) && ctx.Err() == nil {
		c.mu.Lock()
		if c.broken == "" && !c.closing {
			c.broken = "broke the protocol: " + oneLine(c.s.g.redact(c.s.safe(err.Error())), 300)
		}
		c.mu.Unlock()
	}
	return msg, err
}

func (c *evidenceConn) Close() error {
	c.mu.Lock()
	c.closing = true
	c.mu.Unlock()
	return c.Connection.Close()
}

// fault is why the connection broke, "" when it did not (or c is nil).
func (c *evidenceConn) fault() string {
	if c == nil {
		return ""
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.broken
}
