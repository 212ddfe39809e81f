package pipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// ClientOptions configures NewClient. Path and Recorder are required.
type ClientOptions struct {
	Path string
	// Root is the workspace root the host at Path serves, when the caller
	// chose it among several: recorded on every pipe event ("root"), so a
	// re-drive routes each call to the same host.
	Root     string
	Recorder events.Recorder
	// Timeout bounds one call. Zero: 5s.
	Timeout time.Duration
	Logger  *slog.Logger
	// CheckPeer accepts or refuses the uid serving the socket, before
	// anything is sent. Nil: only this process's own uid (a socket another
	// user serves gets no proposal, review or selection).
	CheckPeer func(uid int) error
}

// Client is the bridge side: one connection, calls multiplexed by
// operation id, reconnected on the next call after a failure.
type Client struct {
	opts ClientOptions

	mu      sync.Mutex
	conn    net.Conn
	pending map[string]chan Response
	wmu     sync.Mutex
}

// NewClient returns a client; it connects on the first call.
func NewClient(opts ClientOptions) *Client {
	if opts.Timeout <= 0 {
		opts.Timeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CheckPeer == nil {
		opts.CheckPeer = ownUID("host")
	}
	return &Client{opts: opts, pending: map[string]chan Response{}}
}

// Call sends req and waits for the response with the same operation id.
func (c *Client) Call(ctx context.Context, req Request) (Response, error) {
	req.V = Version
	base := events.Event{RequestID: parseID(req.RequestID), OperationID: parseID(req.OperationID), Traceparent: traceparentOf(req.Traceparent)}
	emit := func(kind string, outcome events.Outcome, code events.Code, since time.Time, attrs events.Attrs) {
		e := base
		e.Kind, e.Outcome, e.Code, e.Attrs = kind, outcome, code, attrs
		c.opts.Recorder.Emit(e.Took(since, time.Now()))
	}
	// attrs are the attempt's attributes and kv, key, value pairs.
	attrs := func(kv ...string) events.Attrs {
		all := append(make([]string, 0, 6+len(kv)), events.AttrCommand, req.Command, "path", c.opts.Path)
		if c.opts.Root != "" {
			all = append(all, "root", c.opts.Root)
		}
		return events.A(append(all, kv...)...)
	}
	emit(events.KindPipeAttempt, events.OK, "", time.Time{}, attrs())
	frame, err := encodeFrame(req)
	if err != nil {
		return Response{}, err
	}
	conn, fresh, err := c.connect()
	if foreign := (*foreignPeerError)(nil); errors.As(err, &foreign) {
		emit(events.KindPipeUnavailable, events.Denied, events.CodeForeignPeer, time.Time{}, attrs(events.AttrError, foreign.Error(), "uid", strconv.Itoa(foreign.uid)))
		return Response{}, &events.Err{Code: events.CodeForeignPeer, Msg: fmt.Sprintf("%s; nothing was sent. Stop whatever serves %s, or point TRACEBRIDGE_HOST at your own host's socket", foreign.Error(), c.opts.Path)}
	}
	if err != nil {
		emit(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, time.Time{}, attrs(events.AttrError, err.Error()))
		return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: Activation(c.opts.Path)}
	}
	// Every attempt that has a connection says so, new or reused, so the
	// step pipe.attempt opened is always closed.
	emit(events.KindPipeConnected, events.OK, "", time.Time{}, attrs("reused", strconv.FormatBool(!fresh)))
	ch := make(chan Response, 1)
	c.mu.Lock()
	if _, dup := c.pending[req.OperationID]; dup {
		c.mu.Unlock()
		return Response{}, fmt.Errorf("operation %s already in flight", req.OperationID)
	}
	c.pending[req.OperationID] = ch
	c.mu.Unlock()
	defer func() { c.mu.Lock(); delete(c.pending, req.OperationID); c.mu.Unlock() }()
	t0 := time.Now()
	// Recorded before the write, so it always precedes the host's
	// host.request.received in the log.
	emit(events.KindPipeRequestSent, events.OK, "", time.Time{}, attrs(events.AttrPayload, string(req.Payload)))
	c.wmu.Lock()
	conn.SetWriteDeadline(time.Now().Add(c.opts.Timeout))
	_, err = conn.Write(frame)
	c.wmu.Unlock()
	if err != nil {
		c.drop(conn, err)
		emit(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, t0, attrs())
		return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: "the host connection broke: " + err.Error() + ". " + Activation(c.opts.Path)}
	}
	timer := time.NewTimer(c.opts.Timeout)
	defer timer.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			emit(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, t0, attrs())
			return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: "the host closed the connection before answering. " + Activation(c.opts.Path)}
		}
		emit(events.KindPipeResponseReceived, events.OutcomeOf(resp.Code), resp.Code, t0, attrs(events.AttrAnswer, answerAttr(resp)))
		return resp, nil
	case <-timer.C:
		emit(events.KindPipeTimeout, events.Timeout, events.CodePipeTimeout, t0, attrs())
		return Response{}, &events.Err{Code: events.CodePipeTimeout, Msg: fmt.Sprintf("the host did not answer %s within %v", req.Command, c.opts.Timeout)}
	case <-ctx.Done():
		emit(events.KindPipeTimeout, events.Cancelled, events.CodeCancelled, t0, attrs())
		return Response{}, ctx.Err()
	}
}

// connect returns the live connection, dialing one if needed.
func (c *Client) connect() (net.Conn, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != nil {
		return c.conn, false, nil
	}
	nc, err := dial(c.opts.Path, time.Second)
	if err != nil {
		return nil, false, err
	}
	uid, err := peerUID(nc)
	if err == nil {
		err = c.opts.CheckPeer(uid)
	}
	if err != nil {
		nc.Close()
		return nil, false, &foreignPeerError{uid: uid, err: err}
	}
	c.conn = nc
	go c.read(c.conn)
	return c.conn, true, nil
}

// foreignPeerError is a socket served by a process the check refused.
type foreignPeerError struct {
	uid int
	err error
}

func (e *foreignPeerError) Error() string { return e.err.Error() }

// ownUID accepts only this process's uid.
func ownUID(what string) func(int) error {
	me := os.Getuid()
	return func(uid int) error {
		if uid != me {
			return fmt.Errorf("the %s socket is served by uid %d, not by you (uid %d)", what, uid, me)
		}
		return nil
	}
}

// read delivers responses to their callers until the connection ends.
func (c *Client) read(conn net.Conn) {
	r := newReader(conn)
	for {
		line, err := readFrame(r)
		if err != nil {
			c.drop(conn, err)
			return
		}
		resp, err := decodeResponse(line)
		if err != nil {
			c.opts.Logger.Warn("pipe: unreadable response from the host", "err", err)
			continue
		}
		c.mu.Lock()
		ch := c.pending[resp.OperationID]
		delete(c.pending, resp.OperationID)
		c.mu.Unlock()
		if ch != nil {
			ch <- resp
		}
	}
}

// drop forgets a broken connection and fails the calls waiting on it.
func (c *Client) drop(conn net.Conn, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn != conn {
		return
	}
	c.conn = nil
	conn.Close()
	if !errors.Is(err, net.ErrClosed) {
		c.opts.Logger.Debug("pipe: connection lost", "err", err)
	}
	for op, ch := range c.pending {
		close(ch)
		delete(c.pending, op)
	}
}

// Close closes the connection.
func (c *Client) Close() error {
	c.mu.Lock()
	conn := c.conn
	c.mu.Unlock()
	if conn != nil {
		c.drop(conn, net.ErrClosed)
	}
	return nil
}

// Answer is the host's answer as pipe.response.received records it (its
// "answer" attribute): what a recorded session replays.
type Answer struct {
	OK      bool            `json:"ok"`
	Code    events.Code     `json:"code,omitempty"`
	Message string          `json:"message,omitempty"`
	Payload json.RawMessage `json:"payload,omitempty"`
}

func answerAttr(r Response) string {
	b, _ := json.Marshal(Answer{OK: r.OK, Code: r.Code, Message: r.Message, Payload: r.Payload})
	return string(b)
}
