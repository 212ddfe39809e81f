//go:build linux

package main

import (
	"context"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// noopArg makes this binary the no-op MCP server every path reaches.
const noopArg = "noop-server"

// runNoop serves one read-only tool that answers at once, over stdio: the
// server costs as little as a server can, so what a path adds shows.
func runNoop() {
	s := sdk.NewServer(&sdk.Implementation{Name: "noop", Version: "1"}, nil)
	type args struct {
		Text string `json:"text,omitempty"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "echo", Description: "answers with its text", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}},
		func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, map[string]any, error) {
			return nil, map[string]any{"text": a.Text}, nil
		})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

func callParams(tool string) *sdk.CallToolParams {
	return &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}}
}
