package executor

import "context"

type rootsKey struct{}

// WithClientRoots returns ctx carrying the roots the MCP client declared
// (file:// URIs): a tool that must pick one of several workspaces reads
// them with ClientRoots.
func WithClientRoots(ctx context.Context, roots []string) context.Context {
	return context.WithValue(ctx, rootsKey{}, roots)
}

// ClientRoots are the roots WithClientRoots put in ctx (nil: none known).
func ClientRoots(ctx context.Context) []string {
	r, _ := ctx.Value(rootsKey{}).([]string)
	return r
}
