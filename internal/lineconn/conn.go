package lineconn

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ErrFrameTooLarge is a message longer than the cap (the SDK's words).
var ErrFrameTooLarge = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

// Transport connects once over r and w, as sdk.IOTransport does.
type Transport struct {
	Reader io.ReadCloser
	Writer io.WriteCloser
	// MaxFrame caps one message's bytes; zero or less: no cap.
	MaxFrame int
	// Batches takes a JSON array of messages (2025-03-26 allowed a client
	// to send one) as its messages, in order; each is answered on a line
	// of its own. Without it an array ends the connection.
	Batches bool
}

// Connect implements sdk.Transport: it starts reading.
func (t *Transport) Connect(context.Context) (sdk.Connection, error) {
	c := &Conn{r: t.Reader, w: t.Writer, batches: t.Batches, incoming: make(chan read), closed: make(chan struct{})}
	go c.readLoop(t.MaxFrame)
	return c, nil
}

// Conn is one connection. Its reader runs in a goroutine of its own, so a
// Read can end with its context or with Close.
type Conn struct {
	r        io.ReadCloser
	w        io.WriteCloser
	wmu      sync.Mutex
	incoming chan read
	closed   chan struct{}
	once     sync.Once
	closeErr error
	batches  bool
}

type read struct {
	msg jsonrpc.Message
	err error
}

func (c *Conn) readLoop(maxFrame int) {
	lim := &frameLimit{r: c.r, limit: maxFrame}
	dec := json.NewDecoder(lim)
	for {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if err == nil {
			err = trailing(dec)
		}
		var msgs []jsonrpc.Message
		if err == nil {
			msgs, err = c.decode(raw)
		}
		if lim.over() && err != nil && !errors.Is(err, io.EOF) {
			err = ErrFrameTooLarge
		}
		if err != nil {
			select {
			case c.incoming <- read{err: err}:
			case <-c.closed:
			}
			return
		}
		for _, msg := range msgs {
			select {
			case c.incoming <- read{msg: msg}:
			case <-c.closed:
				return
			}
		}
		lim.reset(dec.Buffered())
	}
}

// decode is one message, or a batch's when the connection takes them.
func (c *Conn) decode(raw json.RawMessage) ([]jsonrpc.Message, error) {
	if !c.batches || len(raw) == 0 || raw[0] != '[' {
		msg, err := Decode(raw)
		return []jsonrpc.Message{msg}, err
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(raw, &batch); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(batch) == 0 {
		return nil, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(batch))
	for _, m := range batch {
		msg, err := Decode(m)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, msg)
	}
	return msgs, nil
}

// trailing is the SDK's check after a message: only a line end may follow
// it on its line.
func trailing(dec *json.Decoder) error {
	var b [1]byte
	n, err := dec.Buffered().Read(b[:])
	switch {
	case n > 0 && b[0] != '\n' && b[0] != '\r':
		return errors.New("invalid trailing data at the end of stream")
	case n == 0 && err != nil && err != io.EOF:
		return err
	}
	return nil
}

// Read implements sdk.Connection.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	default:
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		return v.msg, v.err
	case <-c.closed:
		return nil, io.EOF
	}
}

// Write implements sdk.Connection: one message, one line.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	default:
	}
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("marshaling message: %v", err)
	}
	data = append(data, '\n')
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(data)
	return err
}

// Close implements sdk.Connection: it closes both ends, once.
func (c *Conn) Close() error {
	c.once.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}

// SessionID implements sdk.Connection: a stream has none.
func (c *Conn) SessionID() string { return "" }

// frameLimit counts the bytes read for the message being decoded (what the
// decoder had buffered past the last one counts toward the next).
type frameLimit struct {
	r     io.Reader
	limit int
	count int
}

func (f *frameLimit) Read(p []byte) (int, error) {
	if f.limit <= 0 {
		return f.r.Read(p)
	}
	if f.count >= f.limit {
		return 0, ErrFrameTooLarge
	}
	if len(p) > f.limit-f.count {
		p = p[:f.limit-f.count]
	}
	n, err := f.r.Read(p)
	f.count += n
	return n, err
}

func (f *frameLimit) over() bool { return f.limit > 0 && f.count >= f.limit }

// reset starts the next message's count at what is already buffered of it.
func (f *frameLimit) reset(buffered io.Reader) {
	n := 0
	if b, ok := buffered.(interface{ Len() int }); ok {
		n = b.Len()
	}
	f.count = n
}
