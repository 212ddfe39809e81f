package lsp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
)

// message is one JSON-RPC 2.0 message: a request (id and method), a
// notification (method only) or a response (id, result or error).
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`
}

// RPCError is a language server's error response.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *RPCError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// errClosed is a call whose connection ended before its answer.
var errClosed = errors.New("the language server's connection closed")

// conn is a JSON-RPC client over a language server's stdio.
type conn struct {
	w   io.Writer
	wmu sync.Mutex

	mu      sync.Mutex
	next    int64
	pending map[string]chan message
	err     error // why the connection ended
	done    chan struct{}
	exited  chan struct{} // closed when the server's process has exited

	// onNotify is told the server's notifications; onRequest answers its
	// requests (a nil result is JSON null). Both run on the read loop.
	onNotify  func(method string, params json.RawMessage)
	onRequest func(method string, params json.RawMessage) any
}

func newConn(w io.Writer) *conn {
	return &conn{w: w, pending: map[string]chan message{}, done: make(chan struct{}), exited: make(chan struct{})}
}

// read delivers messages until r ends or sends something that is not a
// message; then it fails every call in flight.
func (c *conn) read(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var body []byte
		if body, err = readMessage(br); err != nil {
			break
		}
		var m message
		if err = json.Unmarshal(body, &m); err != nil {
			err = fmt.Errorf("lsp: not a JSON-RPC message: %w", err)
			break
		}
		switch {
		case m.Method != "" && len(m.ID) > 0:
			var result any
			if c.onRequest != nil {
				result = c.onRequest(m.Method, m.Params)
			}
			c.send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": result})
		case m.Method != "":
			if c.onNotify != nil {
				c.onNotify(m.Method, m.Params)
			}
		default:
			c.mu.Lock()
			ch := c.pending[string(m.ID)]
			delete(c.pending, string(m.ID))
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		}
	}
	if errors.Is(err, io.EOF) {
		err = errClosed
	}
	c.mu.Lock()
	c.err = err
	for id, ch := range c.pending {
		close(ch)
		delete(c.pending, id)
	}
	c.mu.Unlock()
	close(c.done)
}

func (c *conn) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(frame(b))
	return err
}

// call sends a request and waits for its response.
func (c *conn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.next++
	id := strconv.FormatInt(c.next, 10)
	ch := make(chan message, 1)
	c.pending[id] = ch
	c.mu.Unlock()
	defer func() { c.mu.Lock(); delete(c.pending, id); c.mu.Unlock() }()
	if err := c.send(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params}); err != nil {
		return nil, err
	}
	select {
	case m, ok := <-ch:
		if !ok {
			c.mu.Lock()
			defer c.mu.Unlock()
			return nil, c.err
		}
		if m.Error != nil {
			return nil, m.Error
		}
		return m.Result, nil
	case <-ctx.Done():
		c.send(map[string]any{"jsonrpc": "2.0", "method": "$/cancelRequest", "params": map[string]any{"id": json.RawMessage(id)}})
		return nil, ctx.Err()
	}
}

func (c *conn) notify(method string, params any) error {
	return c.send(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
}
