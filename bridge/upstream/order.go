package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"sync/atomic"
	"time"
)

// The go-sdk client hands notifications to their handlers on a queue of
// their own, so a call's answer can reach the caller before the
// notifications the server sent ahead of it (the last progress of a call
// was lost in about half of calls). A link counts the notifications its
// handlers take as they are read off the wire, and a call that got its
// answer waits until its handlers have taken every one read before it:
// the client hears them before the answer, in the server's order.

// handledMethods are the notifications the link's handlers take.
var handledMethods = map[string]bool{
	"notifications/progress": true, "notifications/message": true, "notifications/resources/updated": true,
	"notifications/tools/list_changed": true, "notifications/prompts/list_changed": true, "notifications/resources/list_changed": true,
}

// order counts a link's notifications read and handled.
type order struct {
	read, handled atomic.Int64
}

// noted counts a notification read off the wire.
func (o *order) noted(method string) {
	if handledMethods[method] {
		o.read.Add(1)
	}
}

// done counts one taken by its handler.
func (o *order) done() { o.handled.Add(1) }

// settleLimit bounds the wait for handlers: they forward and record, and
// take microseconds; a stuck client must not hold the answer long.
const settleLimit = 2 * time.Second

// settle waits until every notification read so far has been handled.
func (o *order) settle(ctx context.Context) {
	target := o.read.Load()
	deadline := time.Now().Add(settleLimit)
	for o.handled.Load() < target && time.Now().Before(deadline) && ctx.Err() == nil {
		time.Sleep(200 * time.Microsecond)
	}
}

// sseCounter passes an HTTP upstream's event stream through unchanged,
// noting each notification in it as the SDK reads it.
type sseCounter struct {
	io.ReadCloser
	o    *order
	line []byte
	max  int
}

func (c *sseCounter) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	for rest := p[:n]; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			if len(c.line)+len(rest) <= c.max {
				c.line = append(c.line, rest...)
			} else {
				c.line = c.line[:0]
			}
			break
		}
		if len(c.line)+i <= c.max {
			c.line = append(c.line, rest[:i]...)
			c.take(c.line)
		}
		c.line = c.line[:0]
		rest = rest[i+1:]
	}
	return n, err
}

// take notes one SSE line if it carries a notification.
func (c *sseCounter) take(line []byte) {
	data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
	if !ok {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(bytes.TrimSpace(data), &m) == nil && m.Method != "" && len(m.ID) == 0 {
		c.o.noted(m.Method)
	}
}

// idleTimeout is a call's context: it ends timeout after the call started
// or after the upstream last reported progress on it (touch), with cause
// context.DeadlineExceeded.
func idleTimeout(ctx context.Context, timeout time.Duration) (cctx context.Context, touch func(), cancel func()) {
	cctx, cancelCause := context.WithCancelCause(ctx)
	t := time.AfterFunc(timeout, func() { cancelCause(context.DeadlineExceeded) })
	return cctx, func() { t.Reset(timeout) }, func() { t.Stop(); cancelCause(context.Canceled) }
}
