package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// evidenceTransport wraps the transport to an upstream so the bridge sees
// what the SDK's client does not expose: the JSON-RPC id of each request it
// sends (recorded as upstream.request.sent for the call that sent it) and
// why the connection broke (garbage, an oversized frame).
type evidenceTransport struct {
	inner sdk.Transport
	s     *Server
}

func (t *evidenceTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	c, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	ec := &evidenceConn{Connection: c, s: t.s}
	t.s.conn = ec // under s.mu: connect runs inside session
	return ec, nil
}

type evidenceConn struct {
	sdk.Connection
	s *Server

	mu      sync.Mutex
	broken  string // why reading failed ("" while it works or after a clean EOF)
	closing bool
}

// callKey carries a call's evidence to the connection's Write.
type callKey struct{}

// callRec is what a request's upstream.request.sent names.
type callRec struct {
	req, op events.ID
	tool    string
	rpcID   string
	// written, when set, is called as the request goes to the transport
	// (it releases the server's write gate).
	written func()
}

func (c *evidenceConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if r, ok := msg.(*jsonrpc.Request); ok && r.IsCall() {
		if rec, ok := ctx.Value(callKey{}).(*callRec); ok {
			rec.rpcID = fmt.Sprint(r.ID.Raw())
			c.s.emit(events.KindUpstreamRequestSent, rec.req, rec.op, events.OK, "", zeroTime, map[string]string{
				"method": r.Method, "rpcId": rec.rpcID, projections.AttrUpTool: rec.tool})
			// The gate's check holds until here: release it before the
			// transport's write, which over HTTP lasts as long as the
			// answer's stream, so calls do not queue behind one another.
			if rec.written != nil {
				rec.written()
			}
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *evidenceConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
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
