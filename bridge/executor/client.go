package executor

import (
	"context"
	"encoding/json"
	"time"
)

// Client is the MCP client session a request came from. The gateway relays
// what an upstream asks or tells (sampling, elicitation, roots, log
// messages) to that session alone; Key names it for its lifetime.
type Client interface {
	Key() string
}

type clientKey struct{}

// WithClient returns ctx carrying the client session c.
func WithClient(ctx context.Context, c Client) context.Context {
	return context.WithValue(ctx, clientKey{}, c)
}

// ClientOf is the client session WithClient put in ctx (nil: none, as for
// the bridge's own work).
func ClientOf(ctx context.Context) Client {
	c, _ := ctx.Value(clientKey{}).(Client)
	return c
}

type declaredKey struct{}

// WithDeclared returns ctx carrying the capabilities the client declared
// on this request (2026-07-28's per-request _meta, as JSON): what the
// gateway tells the server the request's client can answer.
func WithDeclared(ctx context.Context, caps json.RawMessage) context.Context {
	return context.WithValue(ctx, declaredKey{}, caps)
}

// DeclaredOf is what WithDeclared put in ctx (nil: the request declared
// nothing of its own).
func DeclaredOf(ctx context.Context) json.RawMessage {
	c, _ := ctx.Value(declaredKey{}).(json.RawMessage)
	return c
}

type polledKey struct{}

// WithPolled returns ctx carrying f: called when the server of the call
// made with ctx ends its event stream before answering, so that its
// client comes back for the answer (SEP-1699 polling). The HTTP front door
// then ends its own client's stream the same way (through equals direct)
// — asking it to wait retry, as the server asked (0: it did not say) — and
// f's channel is closed when that client comes back (nil: it cannot tell).
func WithPolled(ctx context.Context, f func(retry time.Duration) <-chan struct{}) context.Context {
	return context.WithValue(ctx, polledKey{}, f)
}

// PolledOf is what WithPolled put in ctx (nil: the client cannot be asked
// to come back).
func PolledOf(ctx context.Context) func(retry time.Duration) <-chan struct{} {
	f, _ := ctx.Value(polledKey{}).(func(time.Duration) <-chan struct{})
	return f
}
