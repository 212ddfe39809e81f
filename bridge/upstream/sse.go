package upstream

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// detached connects an SSE upstream with a context the handshake's
// deadline does not end once connected. The SSE transport's event stream
// is the GET its Connect opens with the context it is given, and every
// answer of the session arrives on it: connected with the handshake's
// context, the stream ended as the handshake returned and the next
// request read EOF. Until Connect returns, the handshake's deadline holds;
// after, the stream lasts until the connection is closed.
type detached struct{ inner sdk.Transport }

func (d detached) Connect(ctx context.Context) (sdk.Connection, error) {
	live, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, cancel)
	c, err := d.inner.Connect(live)
	if !stop() { // the handshake's context ended while connecting
		if c != nil {
			c.Close()
		}
		if err == nil {
			err = context.Cause(ctx)
		}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return &cancelOnClose{Connection: c, cancel: cancel}, nil
}

// cancelOnClose ends the stream's context when the connection closes.
type cancelOnClose struct {
	sdk.Connection
	cancel context.CancelFunc
}

func (c *cancelOnClose) Close() error {
	defer c.cancel()
	return c.Connection.Close()
}
