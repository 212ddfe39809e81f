package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// A server without resources/templates/list (an optional method) still has
// its prompts and resources listed: each list stands on its own.
func TestOneMissingListHidesNothing(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{
		"f": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_RESOURCES = "f://notes", TB_FAULT_PROMPTS = "greet", TB_FAULT_REFUSE = "resources/templates/list" }`,
	})
	b := startBridge(t, tbBin, filepath.Join(t.TempDir(), "data"), "2025-06-18", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var prompts, resources []string
	for p, err := range b.session.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	for r, err := range b.session.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.URI)
	}
	if !slices.Contains(prompts, "f__greet") || !slices.Contains(resources, "f://notes") {
		t.Fatalf("prompts %q, resources %q: want f__greet and f://notes", prompts, resources)
	}
	res, err := b.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "f__greet"})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("prompts/get: %v %+v", err, res)
	}
}

// linePeer drives `tracebridge mcp` through bare pipes, one JSON-RPC line
// at a time, so what arrives before an answer is seen in the order the
// bridge wrote it (a go-sdk client would reorder notifications itself).
type linePeer struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startLinePeer(t *testing.T, data string, env ...string) *linePeer {
	t.Helper()
	cmd := exec.Command(tbBin, "--data", data, "mcp")
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = &testenv.Buffer{}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { in.Close(); cmd.Process.Kill(); cmd.Wait() })
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	p := &linePeer{in: in, out: sc}
	p.send(t, initLine)
	p.until(t, "1")
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *linePeer) send(t *testing.T, line string) {
	t.Helper()
	if _, err := p.in.Write([]byte(line + "\n")); err != nil {
		t.Fatal(err)
	}
}

// until reads lines up to the answer to id and returns those before it.
func (p *linePeer) until(t *testing.T, id string) (before []string, answer string) {
	t.Helper()
	for p.out.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(p.out.Bytes(), &m)
		if m.Method == "" && string(m.ID) == id {
			return before, p.out.Text()
		}
		before = append(before, p.out.Text())
	}
	t.Fatalf("the bridge ended before answering %s", id)
	return nil, ""
}

// Every progress notification an upstream sends before its answer reaches
// the client before the answer: the last one was lost in about half of
// calls (the go-sdk client hands notifications to their handler on a
// queue of their own, and the call returned first).
func TestProgressArrivesBeforeTheAnswer(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1" }`})
	p := startLinePeer(t, filepath.Join(t.TempDir(), "data"), cfg)
	const calls = 40
	short := 0
	for i := range calls {
		id := fmt.Sprint(100 + i)
		p.send(t, fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"f__slow","arguments":{},"_meta":{"progressToken":"p%d"}}}`, id, i))
		before, answer := p.until(t, id)
		if !strings.Contains(answer, "slow done") {
			t.Fatalf("call %d answered %s", i, answer)
		}
		n := 0
		for _, l := range before {
			if strings.Contains(l, `"notifications/progress"`) && strings.Contains(l, fmt.Sprintf(`"p%d"`, i)) {
				n++
			}
		}
		if n != 3 {
			short++
		}
	}
	if short > 0 {
		t.Fatalf("%d of %d calls answered before all 3 of their progress notifications", short, calls)
	}
}

// An upstream that keeps reporting progress is not cut off at its timeout:
// each report starts the deadline again (1s here; the call takes 1.5s).
func TestProgressKeepsALongCallAlive(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{"f": "env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_TICKS = \"5\" }\ntimeout = \"1s\""})
	p := startLinePeer(t, filepath.Join(t.TempDir(), "data"), cfg)
	p.send(t, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"f__ticker","arguments":{},"_meta":{"progressToken":"tk"}}}`)
	before, answer := p.until(t, "7")
	if !strings.Contains(answer, "ticked") {
		t.Fatalf("a call reporting progress every 300ms with a 1s timeout: %s (after %d lines)", answer, len(before))
	}
	// Without progress asked for, the same call is silent past 1s: the
	// timeout holds.
	p.send(t, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"f__ticker","arguments":{}}}`)
	if _, answer := p.until(t, "8"); !strings.Contains(answer, string(events.CodeUpstreamTimeout)) {
		t.Fatalf("a silent 1.5s call with a 1s timeout: %s", answer)
	}
}

// What the client is told is what is recorded, and no client waits for a
// server it does not use: once a server's tools are pinned, a later bridge
// lists them from the pins without starting anything, starts a server when
// one of its tools is first called, and when a server cannot start (here:
// its secret is gone) its tools stay listed and a call gets the real code,
// the same in the result and in the verdict.
func TestPinnedServersListWithoutStartingAndFailWithTheRealCode(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	servers := map[string]string{
		"a": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_NAME = "a" }`,
		"b": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_NAME = "b", TB_FAULT_SECRET = "${secret:B}" }`,
	}
	secrets := "[secrets.B]\nenv = \"TB_B_SECRET\"\n"
	b := startBridge(t, tbBin, data, "2025-06-18", hostileConfig(t, secrets, servers), "TB_B_SECRET=b-secret-value-1234")
	toolNames(t, b.session) // lists (and pins) both servers' tools
	if _, _, code := b.call(t, "b__ok", map[string]any{"text": "x"}); code != "" {
		t.Fatalf("first run: b__ok: %s", code)
	}
	b.close(t)
	started := countKind(t, data, "upstream.started")

	// The next bridge: B's secret is gone.
	b = startBridge(t, tbBin, data, "2025-06-18", hostileConfig(t, secrets, servers))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var names []string
	for tl, err := range b.session.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tl.Name)
	}
	if !slices.Contains(names, "a__ok") || !slices.Contains(names, "b__ok") {
		t.Fatalf("tools listed from the pins: %q", names)
	}
	if n := countKind(t, data, "upstream.started"); n != started {
		t.Fatalf("tools/list started %d servers; with every tool pinned it starts none", n-started)
	}
	if _, _, code := b.call(t, "a__ok", map[string]any{"text": "x"}); code != "" {
		t.Fatalf("a__ok: %s", code)
	}
	if n := countKind(t, data, "upstream.started"); n != started+1 {
		t.Fatalf("calling a__ok started %d servers, want 1 (a)", n-started)
	}
	res, req, code := b.call(t, "b__ok", map[string]any{"text": "x"})
	if code != events.CodeSecretUnresolved {
		t.Fatalf("b__ok without its secret: %s %q, want SecretUnresolved", code, textOf(res))
	}
	b.close(t)
	out, err := exec.Command(tbBin, "--data", data, "tail", "--request", req.String(), "--json", "-n", "1000").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `"kind":"executor.audit"`) || !strings.Contains(string(out), `"code":"SecretUnresolved"`) ||
		strings.Contains(string(out), `"code":"UnknownTool"`) {
		t.Fatalf("the run of b__ok does not record SecretUnresolved as the client was told:\n%s", out)
	}
}

// A call waiting for an operator tells a client that asked for progress
// so, every 2s, until the decision (here: none, so ApprovalTimeout).
func TestApprovalWaitReportsProgress(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "[approval]\nmode = \"prompt\"\ntimeout = \"5s\"\n", map[string]string{
		"f": "env = { TB_FAULT_UPSTREAM = \"1\" }\napproval = { \"ok\" = \"always\" }"})
	p := startLinePeer(t, filepath.Join(t.TempDir(), "data"), cfg)
	p.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"f__ok","arguments":{"text":"x"},"_meta":{"progressToken":"wait"}}}`)
	before, answer := p.until(t, "5")
	if !strings.Contains(answer, string(events.CodeApprovalTimeout)) {
		t.Fatalf("answer: %s", answer)
	}
	n := 0
	for _, l := range before {
		if strings.Contains(l, `"notifications/progress"`) && strings.Contains(l, "waiting for an operator") {
			n++
		}
	}
	if n < 2 {
		t.Fatalf("%d progress notifications during a 5s approval wait, want 2 or more:\n%s", n, strings.Join(before, "\n"))
	}
}

// A 2026-07-28 client (go-sdk v1.8: sessionless requests, and a
// subscriptions/listen stream because it handles tools/list_changed)
// connects over --http, hears of a tool the upstream added, and its
// requests, each a session of its own at the front door, share one
// upstream connection instead of starting the server per request.
func TestLatestProtocolClientOverHTTP(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	url, token, stderr, _ := startHTTPBridge(t, data, hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1" }`}))
	var changed atomic.Int32
	c := sdk.NewClient(&sdk.Implementation{Name: "latest", Version: "1"}, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) { changed.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s; this test is about 2026-07-28", v)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "f__grow", Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("f__grow: %v %+v", err, res)
		}
	}
	eventually(t, 10*time.Second, "the client hears tools/list_changed on its listen stream", func() bool { return changed.Load() > 0 })
	if n := countKind(t, data, "upstream.started"); n != 1 {
		t.Fatalf("the upstream was started %d times for one client's sessionless requests, want 1", n)
	}
}

// A prompt an upstream adds while a client is connected reaches the
// client: the server says prompts/list_changed, the gateway lists it
// again, and the client is told in turn.
func TestUpstreamPromptListChangesReachTheClient(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_PROMPTS = "first" }`})
	cmd := exec.Command(tbBin, "--data", filepath.Join(t.TempDir(), "data"), "mcp")
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), cfg)
	var changed atomic.Int32
	c := sdk.NewClient(&sdk.Implementation{Name: "prompts", Version: "1"}, &sdk.ClientOptions{
		PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) { changed.Add(1) },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	prompts := func() []string {
		var out []string
		for p, err := range cs.Prompts(ctx, nil) {
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, p.Name)
		}
		return out
	}
	if got := prompts(); !slices.Contains(got, "f__first") {
		t.Fatalf("prompts: %q", got)
	}
	time.Sleep(700 * time.Millisecond) // past the notifications of the first listing
	before := changed.Load()
	if res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "f__addprompt", Arguments: map[string]any{"text": "later"}}); err != nil || res.IsError {
		t.Fatalf("addprompt: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, "the client is told the prompts changed", func() bool { return changed.Load() > before })
	eventually(t, 10*time.Second, "f__later is listed", func() bool { return slices.Contains(prompts(), "f__later") })
}

// An upstream that asks the client for its roots gets the client's own
// (server-filesystem logged "Client does not support MCP Roots" behind
// the gateway), and the new ones after the client says they changed.
func TestClientRootsReachTheUpstream(t *testing.T) {
	long(t)
	a, b := t.TempDir(), t.TempDir()
	cfg := hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1" }`})
	cmd := exec.Command(tbBin, "--data", filepath.Join(t.TempDir(), "data"), "mcp")
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), cfg)
	client := sdk.NewClient(&sdk.Implementation{Name: "editor", Version: "1"}, nil)
	//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; the gateway relays them
	client.AddRoots(&sdk.Root{URI: "file://" + a})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	roots := func() string {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "f__roots", Arguments: map[string]any{}})
		if err != nil {
			t.Fatal(err)
		}
		return textOf(res)
	}
	if got := roots(); got != "roots: file://"+a {
		t.Fatalf("the upstream saw %q, want the client's root file://%s", got, a)
	}
	//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; the gateway relays them
	client.AddRoots(&sdk.Root{URI: "file://" + b})
	eventually(t, 10*time.Second, "the upstream sees the new root", func() bool { return strings.Contains(roots(), "file://"+b) })
}
