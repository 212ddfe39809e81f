package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/web"
)

// demoMCP drives a scripted MCP session through this very binary, as an AI
// client would launch it, and prints the evidence of each call.
// It returns the session's id and the request that failed because the host
// had stopped.
func demoMCP(ctx context.Context, m *Main, node *hub.Node, ws string, step func(string, ...any)) (sessionID, failed events.ID, err error) {
	cfg := filepath.Join(m.data, "demo-tracebridge.toml")
	if err := os.WriteFile(cfg, []byte("# demo: deny bm25 to show a policy denial\n[policy]\ndeny = [\"bm25_text_search\"]\n"), 0o600); err != nil {
		return sessionID, failed, err
	}
	step("workspace host: `tracebridge up --root %s` (attaches to the hub above)", ws)
	up, err := demoHost(ctx, m, ws)
	if err != nil {
		return sessionID, failed, err
	}
	defer func() { up.Process.Signal(os.Interrupt); up.Wait() }()

	step("MCP: an AI client launches `tracebridge mcp` (this binary, attached to the hub above) and calls tools")
	cctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	session, err := demoClient(cctx, m, m.Stderr, "--config", cfg)
	if err != nil {
		return sessionID, failed, err
	}
	defer session.Close()
	first, err := demoCalls(cctx, m, session)
	if err != nil {
		return sessionID, failed, err
	}
	step("operator: approve the proposal (bound to its content hash); the host applies it")
	if err := demoApprove(ctx, m, ws); err != nil {
		return sessionID, failed, err
	}

	step("the host stops; the next workspace call says what to start, at once")
	up.Process.Signal(os.Interrupt)
	up.Wait()
	res, err := session.CallTool(cctx, &sdk.CallToolParams{Name: "get_selection", Arguments: map[string]any{}})
	if err != nil {
		return sessionID, failed, err
	}
	failed, _ = events.ParseID(fmt.Sprint(res.Meta[bmcp.MetaRequestID]))
	fmt.Fprintf(m.Stdout, "tools/call get_selection       error  %s\n", resultText(res))
	session.Close()
	evs, err := node.ByRequest(ctx, first)
	if err != nil {
		return sessionID, failed, err
	}
	step("the first call's evidence, as `tracebridge tail --request %s` prints it", first)
	for i := range evs {
		writeEventLine(m.Stdout, &evs[i])
	}
	if len(evs) > 0 {
		sessionID = evs[0].SessionID
	}
	return sessionID, failed, nil
}

// demoHost writes a small Go workspace, starts `tracebridge up` on it and
// sets the operator's focus; the caller stops the host.
func demoHost(ctx context.Context, m *Main, ws string) (*exec.Cmd, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(ws, "svc"), 0o755); err != nil {
		return nil, err
	}
	os.WriteFile(filepath.Join(ws, "go.mod"), []byte("module example.com/demo\n"), 0o644)
	os.WriteFile(filepath.Join(ws, "svc", "price.go"), []byte("package svc\n\n// Price returns the price in cents.\nfunc Price() int { return 100 }\n"), 0o644)
	up := exec.Command(self, "--data", m.data, "--log-level", "warn", "up", "--root", ws, "--ui", "off")
	up.Stderr = io.Discard
	if err := up.Start(); err != nil {
		return nil, err
	}
	dir := hub.DataDir(m.data)
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(m.pipePath(dir)); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	hc, done, err := m.hostClient(ctx)
	if err == nil {
		_, err = hc.SetFocus(ctx, host.Focus{Path: "svc/price.go", StartLine: 4, StartCol: 6, EndLine: 4, EndCol: 11})
		done()
	}
	if err != nil {
		up.Process.Signal(os.Interrupt)
		up.Wait()
		return nil, err
	}
	fmt.Fprintln(m.Stdout, "operator: tracebridge focus svc/price.go:4:6-4:11")
	return up, nil
}

// demoCalls lists the tools and makes the demo's calls (a success, a
// policy denial, an unknown tool, bad arguments, workspace tools, a
// proposal, a review); it returns the first call's request id.
func demoCalls(ctx context.Context, m *Main, session *sdk.ClientSession) (events.ID, error) {
	var first events.ID
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		return first, err
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
		{"get_selection", map[string]any{}},
		{"list_projects", map[string]any{}},
		{"propose_text_edit", map[string]any{"path": "svc/price.go", "original": "return 100", "replacement": "return 120"}},
		{"present_review", map[string]any{"mode": "replace", "content": "# Review\n\nThe price moves to 120 cents in [svc/price.go:4][]."}},
	}
	for _, c := range calls {
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: c.tool, Arguments: c.args})
		if err != nil {
			return first, fmt.Errorf("tools/call %s: %w", c.tool, err)
		}
		req, _ := events.ParseID(fmt.Sprint(res.Meta[bmcp.MetaRequestID]))
		if first.IsZero() {
			first = req
		}
		text := resultText(res)
		if len(text) > 110 {
			text = text[:107] + "…"
		}
		status := "ok   "
		if res.IsError {
			status = "error"
		}
		fmt.Fprintf(m.Stdout, "tools/call %-18s %s  request %s  %s\n", c.tool, status, req, text)
	}
	return first, nil
}

// resultText is the last text content of a tool result.
func resultText(res *sdk.CallToolResult) string {
	text := ""
	for _, ct := range res.Content {
		if tc, ok := ct.(*sdk.TextContent); ok {
			text = tc.Text
		}
	}
	return text
}

// demoApprove approves every proposal as an operator would and shows the
// edited line.
func demoApprove(ctx context.Context, m *Main, ws string) error {
	hc, closeHost, err := m.hostClient(ctx)
	if err != nil {
		return err
	}
	defer closeHost()
	props, err := hc.Proposals(ctx)
	if err != nil {
		return err
	}
	for _, p := range props {
		done, err := hc.Decide(ctx, host.DecideArgs{ID: p.ID, Approve: true, ContentHash: p.ContentHash, By: "demo"})
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "proposal %s: %s\n%s", done.ID, done.State, done.Preview)
	}
	b, _ := os.ReadFile(filepath.Join(ws, "svc", "price.go"))
	fmt.Fprintf(m.Stdout, "svc/price.go now says: %s", strings.SplitAfter(string(b), "\n")[3])
	return nil
}

// demoKeep leaves the demo's data to look at: the workspace host and the
// operator UI run until ctx ends (Ctrl-C), with one more edit proposal
// waiting for a decision beside the demo's runs and review.
func demoKeep(ctx context.Context, m *Main, ws string) error {
	return m.serveHost(ctx, hostRun{root: ws, name: "demo", ui: web.DefaultAddr, ready: func(url string) {
		if err := demoPropose(ctx, m); err != nil {
			fmt.Fprintf(m.Stderr, "demo: the pending proposal could not be made: %v\n", err)
		}
		fmt.Fprintf(m.Stdout, "\n== operator UI: open %s\n"+
			"runs of the demo, the failed run's verdict and diagram, an edit proposal waiting at /approvals,\n"+
			"the review at /reviews and the workspace at /workspace. Ctrl-C stops it (`tracebridge --data %s ui` prints the URL again).\n", url, m.data)
	}})
}

// demoClient launches this binary's `mcp` on the demo's data dir (with
// extra flags) and connects an MCP client to it.
func demoClient(ctx context.Context, m *Main, stderr io.Writer, flags ...string) (*sdk.ClientSession, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, append([]string{"--data", m.data, "--log-level", "warn", "mcp"}, flags...)...)
	cmd.Stderr = stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "tracebridge-demo", Version: Version}, nil)
	session, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		return nil, fmt.Errorf("start the MCP bridge: %w", err)
	}
	return session, nil
}

// demoPropose has an MCP client propose one more edit, left pending.
func demoPropose(ctx context.Context, m *Main) error {
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	session, err := demoClient(cctx, m, io.Discard)
	if err != nil {
		return err
	}
	defer session.Close()
	res, err := session.CallTool(cctx, &sdk.CallToolParams{Name: "propose_text_edit",
		Arguments: map[string]any{"path": "svc/price.go", "original": "return 120", "replacement": "return 150"}})
	if err != nil {
		return err
	}
	if res.IsError {
		return fmt.Errorf("propose_text_edit failed: %v", res.Content)
	}
	return nil
}
