package executor

import "context"

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
