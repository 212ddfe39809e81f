package pipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// ServerOptions configures NewServer. Handlers and Recorder are required.
type ServerOptions struct {
	Handlers map[string]Handler
	Recorder events.Recorder
	Logger   *slog.Logger
	// CheckPeer accepts or refuses a connecting uid. Nil: only this
	// process's own uid.
	CheckPeer func(uid int) error
	// MaxInFlight bounds concurrent requests per connection. Zero: 64.
	MaxInFlight int
}

// Server is the host side of the pipe.
type Server struct {
	opts     ServerOptions
	commands map[string]bool
	wg       sync.WaitGroup
}

// NewServer returns a server for the handlers.
func NewServer(opts ServerOptions) *Server {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.CheckPeer == nil {
		me := os.Getuid()
		opts.CheckPeer = func(uid int) error {
			if uid != me {
				return fmt.Errorf("peer uid %d is not this host's uid %d", uid, me)
			}
			return nil
		}
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 64
	}
	s := &Server{opts: opts, commands: map[string]bool{}}
	for c := range opts.Handlers {
		s.commands[c] = true
	}
	return s
}

// Serve accepts connections until ctx ends or l is closed, then waits for
// the requests in flight.
func (s *Server) Serve(ctx context.Context, l *Listener) error {
	go func() { <-ctx.Done(); l.shutdown() }()
	defer s.wg.Wait()
	for {
		c, err := l.accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		s.wg.Go(func() { s.serveConn(ctx, c) })
	}
}

func (s *Server) serveConn(ctx context.Context, c net.Conn) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() }) // a stopping host drops its connections
	defer stop()
	uid, err := peerUID(c)
	if err == nil {
		err = s.opts.CheckPeer(uid)
	}
	if err != nil {
		s.opts.Logger.Warn("pipe: refused a peer", "err", err)
		s.opts.Recorder.Emit(events.Event{Kind: events.KindHostReceived, Outcome: events.Denied, Code: events.CodeForeignPeer,
			Attrs: events.A("uid", fmt.Sprint(uid), "error", err.Error())})
		return
	}
	var wmu sync.Mutex
	raw := func(b []byte) error {
		wmu.Lock()
		defer wmu.Unlock()
		c.SetWriteDeadline(time.Now().Add(10 * time.Second))
		_, err := c.Write(b)
		return err
	}
	write := func(resp Response) {
		resp.V = Version
		b, err := encodeFrame(resp)
		if err != nil {
			b, _ = encodeFrame(Response{V: Version, RequestID: resp.RequestID, OperationID: resp.OperationID, Code: events.CodeTooLarge, Message: err.Error()})
		}
		raw(b)
	}
	peer := newPeer(uid, raw)
	ctx = context.WithValue(ctx, peerKey{}, peer)
	sem := make(chan struct{}, s.opts.MaxInFlight)
	var inflight sync.WaitGroup
	defer inflight.Wait()
	defer peer.end() // before the wait: a handler may be calling this peer
	r := newReader(c)
	for {
		line, err := readFrame(r)
		if errors.Is(err, errFrameTooLarge) {
			s.refuse(write, Request{}, events.Errorf(events.CodeTooLarge, "frame exceeds %d bytes", MaxFrame))
			return // the stream cannot be resynchronised cheaply: close it
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.opts.Logger.Debug("pipe: read", "err", err)
			}
			return
		}
		if len(line) == 0 || peer.answer(line) {
			continue
		}
		req, err := decodeRequest(line, s.commands)
		if err != nil {
			s.refuse(write, req, events.AsErr(err, events.CodeMalformedEnvelope))
			continue
		}
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return
		}
		inflight.Go(func() {
			defer func() { <-sem }()
			resp := s.dispatch(ctx, req)
			s.flush(ctx, req)
			write(resp)
		})
	}
}

// refuse answers (and records) a frame that could not be used: req is as
// much of it as could be read (its ids, when it names them).
func (s *Server) refuse(write func(Response), req Request, e *events.Err) {
	s.opts.Recorder.Emit(events.Event{Kind: events.KindHostResponseSent, RequestID: parseID(req.RequestID), OperationID: parseID(req.OperationID),
		Outcome: events.Error, Code: e.Code, Attrs: events.A("error", e.Msg)})
	write(Response{RequestID: req.RequestID, OperationID: req.OperationID, Code: e.Code, Message: e.Msg})
}

// flush waits until the host's events of req are durable. When the log
// cannot take them the answer goes anyway: the bridge's own flush fails too,
// and its policy decides (side-effecting calls fail closed).
func (s *Server) flush(ctx context.Context, req Request) {
	id := parseID(req.RequestID)
	if id.IsZero() {
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.opts.Recorder.Flush(fctx, id); err != nil {
		s.opts.Logger.Warn("pipe: the host's events are not durable; answering anyway", "command", req.Command, "err", err)
	}
}

func (s *Server) dispatch(ctx context.Context, req Request) (resp Response) {
	base := events.Event{RequestID: parseID(req.RequestID), OperationID: parseID(req.OperationID), Traceparent: traceparentOf(req.Traceparent)}
	emit := func(kind string, outcome events.Outcome, code events.Code, attrs events.Attrs) {
		e := base
		e.Kind, e.Outcome, e.Code, e.Attrs = kind, outcome, code, attrs
		s.opts.Recorder.Emit(e)
	}
	emit(events.KindHostReceived, events.OK, "", events.A("command", req.Command))
	emit(events.KindHostDispatched, events.OK, "", events.A("command", req.Command))
	resp = Response{RequestID: req.RequestID, OperationID: req.OperationID}
	defer func() {
		if r := recover(); r != nil {
			s.opts.Logger.Error("pipe: handler panicked", "command", req.Command, "panic", fmt.Sprint(r))
			resp = Response{RequestID: req.RequestID, OperationID: req.OperationID, Code: events.CodeToolPanic, Message: "the host failed handling " + req.Command}
		}
		emit(events.KindHostResponseSent, events.OutcomeOf(resp.Code), resp.Code, events.A("command", req.Command))
	}()
	payload, err := s.opts.Handlers[req.Command](ctx, req)
	if err != nil {
		e := events.AsErr(err, events.CodeToolError)
		resp.Code, resp.Message = e.Code, e.Msg
		return resp
	}
	b, err := json.Marshal(payload)
	if err != nil {
		resp.Code, resp.Message = events.CodeToolError, "the host's answer is not JSON: "+err.Error()
		return resp
	}
	resp.OK, resp.Payload = true, b
	return resp
}

func parseID(s string) events.ID {
	id, err := events.ParseID(s)
	if err != nil {
		return events.ID{}
	}
	return id
}

func traceparentOf(s string) string {
	if len(s) == 55 {
		return s
	}
	return ""
}
