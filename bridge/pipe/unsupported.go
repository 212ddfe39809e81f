//go:build !unix

package pipe

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// ErrUnsupported: Windows named pipes are not implemented yet.
var ErrUnsupported = errors.New("the workspace pipe is not implemented on this system yet (Windows named pipes are planned)")

// Listener is not available here.
type Listener struct{}

// Listen fails on this system.
func Listen(string) (*Listener, error) { return nil, ErrUnsupported }

// Close does nothing.
func (*Listener) Close() error { return nil }

// ServerOptions mirrors the Unix server's options.
type ServerOptions struct {
	Handlers    map[string]Handler
	Recorder    Recorder
	Logger      *slog.Logger
	CheckPeer   func(uid int) error
	MaxInFlight int
}

// Server is not available here.
type Server struct{}

// NewServer returns a server that cannot serve.
func NewServer(ServerOptions) *Server { return &Server{} }

// Serve fails on this system.
func (*Server) Serve(context.Context, *Listener) error { return ErrUnsupported }

// ClientOptions mirrors the Unix client's options.
type ClientOptions struct {
	Path     string
	Recorder Recorder
	Timeout  time.Duration
	Logger   *slog.Logger
}

// CallError is a call that got no answer.
type CallError struct {
	Code events.Code
	Msg  string
}

func (e *CallError) Error() string { return string(e.Code) + ": " + e.Msg }

// Client answers every call with PipeUnavailable here.
type Client struct{}

// NewClient returns a client that cannot connect.
func NewClient(ClientOptions) *Client { return &Client{} }

// Call fails with PipeUnavailable.
func (*Client) Call(context.Context, Request) (Response, error) {
	return Response{}, &CallError{Code: events.CodePipeUnavailable, Msg: ErrUnsupported.Error()}
}

// Close does nothing.
func (*Client) Close() error { return nil }
