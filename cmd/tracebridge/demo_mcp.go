package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/events/hub"
)

// demoMCP drives a scripted MCP session through this very binary, as an AI
// client would launch it, and prints the evidence of each call.
func demoMCP(ctx context.Context, m *Main, node *hub.Node, step func(string, ...any)) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := filepath.Join(m.data, "demo-tracebridge.toml")
	if err := os.WriteFile(cfg, []byte("# demo: deny bm25 to show a policy denial\n[policy]\ndeny = [\"bm25_text_search\"]\n"), 0o600); err != nil {
		return err
	}
	step("MCP: an AI client launches `tracebridge mcp` (this binary, attached to the hub above) and calls tools")
	cmd := exec.Command(self, "--data", m.data, "--log-level", "warn", "mcp", "--config", cfg)
	cmd.Stderr = m.Stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "tracebridge-demo", Version: Version}, nil)
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	session, err := client.Connect(cctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		return fmt.Errorf("start the MCP bridge: %w", err)
	}
	defer session.Close()
	list, err := session.ListTools(cctx, nil)
	if err != nil {
		return err
	}
	var names []string
	for _, t := range list.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(m.Stdout, "tools/list: %s\n", strings.Join(names, ", "))
	calls := []struct {
		tool string
		args map[string]any
	}{
		{"regex_text_search", map[string]any{"pattern": `TODO\(\w+\)`, "entries": []map[string]string{{"id": "main.go", "text": "x := 1 // TODO(ana): check\nreturn x"}}}},
		{"bm25_text_search", map[string]any{"query": "cat", "entries": []map[string]string{{"id": "a", "text": "the cat sat"}}}},
		{"delete_everything", map[string]any{}},
		{"regex_text_search", map[string]any{"pattern": 42}},
	}
	var first events.ID
	for _, c := range calls {
		res, err := session.CallTool(cctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			return fmt.Errorf("tools/call %s: %w", c.tool, err)
		}
		req, _ := events.ParseID(fmt.Sprint(res.Meta[bmcp.MetaRequestID]))
		if first.IsZero() {
			first = req
		}
		text := ""
		for _, ct := range res.Content {
			if tc, ok := ct.(*sdk.TextContent); ok {
				text = tc.Text
			}
		}
		if len(text) > 110 {
			text = text[:107] + "…"
		}
		status := "ok   "
		if res.IsError {
			status = "error"
		}
		fmt.Fprintf(m.Stdout, "tools/call %-18s %s  request %s  %s\n", c.tool, status, req, text)
	}
	session.Close()
	evs, err := node.ByRequest(ctx, first)
	if err != nil {
		return err
	}
	step("the first call's evidence, as `tracebridge tail --request %s` prints it", first)
	for i := range evs {
		writeEventLine(m.Stdout, &evs[i])
	}
	return nil
}
