package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// Clients that start with initialize (2025-06-18, 2025-11-25) and the SDK's
// newest protocol (server/discover) all list and call tools, and each call
// leaves its request's evidence.
func TestMCPWorksInEveryProtocolMode(t *testing.T) {
	for _, proto := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("protocol="+proto, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			b := startBridge(t, tbBin, data, proto)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tools, err := b.session.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, tl := range tools.Tools {
				names = append(names, tl.Name)
			}
			if !slices.Equal(names, []string{"bm25_text_search", "document_symbols", "find_definition", "find_references", "find_symbol",
				"get_active_document", "get_diagnostics", "get_selection", "hover", "ide_query", "list_projects", "present_review", "propose_text_edit", "propose_text_edits", "regex_text_search", "trace_diagram", "trace_replay", "trace_runs"}) {
				t.Fatalf("tools %v: the production binary serves exactly the built-in tools", names)
			}
			res, err := b.session.CallTool(ctx, &sdk.CallToolParams{Name: "regex_text_search",
				Arguments: map[string]any{"pattern": "b+", "text": "abbbc"}, Meta: sdk.Meta{"traceparent": traceparent}})
			if err != nil || res.IsError {
				t.Fatalf("regex: %v %v", err, res)
			}
			req, _ := events.ParseID(fmt.Sprint(res.Meta["tracebridge/requestId"]))
			var out struct{ TotalCount int }
			raw, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(raw, &out)
			if out.TotalCount != 1 {
				t.Fatalf("structured result %s", raw)
			}
			_, bmReq, code := b.call(t, "bm25_text_search", map[string]any{"query": "cat", "entries": []map[string]string{{"id": "a", "text": "the cat"}}})
			if code != "" {
				t.Fatalf("bm25: %s", code)
			}
			b.close(t)
			evs := requestEvents(t, data, req)
			// The session's first call asks the client for its roots.
			want := []string{"mcp.request.received", "mcp.roots.listed", "executor.started", "executor.catalog.resolved", "policy.decided",
				"tool.started", "tool.completed", "executor.audit", "mcp.response.sent"}
			if got := kindsOf(evs); !slices.Equal(got, want) {
				t.Fatalf("request events:\n got %v\nwant %v", got, want)
			}
			for _, e := range evs {
				if e.Traceparent != traceparent || e.SessionID.IsZero() {
					t.Fatalf("%s: traceparent %q, session %s", e.Kind, e.Traceparent, e.SessionID)
				}
			}
			if evs[0].Attrs.Get("tool") != "regex_text_search" || evs[0].Attrs.Get("jsonrpcId") == "" || evs[0].Attrs.Get("method") != "tools/call" {
				t.Fatalf("request event attrs %v", evs[0].Attrs)
			}
			if len(requestEvents(t, data, bmReq)) != len(want)-1 { // roots were asked once
				t.Fatal("bm25 call not fully recorded")
			}
		})
	}
}

// Bad arguments, unknown tools, panics and stray stdout writes are tool
// errors with codes; the session survives all of them.
func TestMCPFailuresAreCodedToolErrors(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbTestBin, data, "2025-06-18")
	cases := []struct {
		tool string
		args any
		code events.Code
	}{
		{"regex_text_search", map[string]any{"pattern": 5, "text": "x"}, events.CodeInvalidArguments},
		{"regex_text_search", map[string]any{"pattern": "(", "text": "x"}, events.CodeInvalidArguments}, // a pattern that does not parse is a bad argument
		{"no_such_tool", map[string]any{}, events.CodeUnknownTool},
		{"test_panic", map[string]any{"text": "boom"}, events.CodeToolPanic},
		{"test_stdout", map[string]any{}, ""},
		{"regex_text_search", map[string]any{"query": "still alive", "text": "still alive"}, ""},
	}
	for _, c := range cases {
		res, req, code := b.call(t, c.tool, c.args)
		if code != c.code {
			t.Fatalf("%s: code %q, want %q (%s)", c.tool, code, c.code, textOf(res))
		}
		if c.code != "" && !strings.HasPrefix(textOf(res), string(c.code)+":") {
			t.Fatalf("%s: the model-visible text does not lead with the code: %q", c.tool, textOf(res))
		}
		_ = req
	}
	if !strings.Contains(b.stderr.String(), "stray line on stdout from a tool") {
		t.Fatal("the stray stdout write did not land on stderr")
	}
	b.close(t)
}

// The client cancels a slow call: the tool sees it, and the evidence shows
// the cancellation notification and the cancelled run.
func TestMCPCancellationIsRecorded(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbTestBin, data, "2025-06-18")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	_, err := b.session.CallTool(ctx, &sdk.CallToolParams{Name: "test_sleep", Arguments: map[string]any{"ms": 20000}})
	cancel()
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	_, _, code := b.call(t, "regex_text_search", map[string]any{"query": "x", "text": "x"}) // still serving
	if code != "" {
		t.Fatal(code)
	}
	time.Sleep(200 * time.Millisecond)
	b.close(t)
	st := readStore(t, data)
	all, _ := st.Range(1, 10000)
	var cancelled events.ID
	for _, e := range all {
		if e.Kind == events.KindMCPNotificationReceived && e.Attrs.Get("method") == "notifications/cancelled" {
			cancelled = e.RequestID
		}
	}
	if cancelled.IsZero() {
		t.Fatalf("no cancellation notification naming its request: %v", kindsOf(all))
	}
	evs, _ := st.ByRequest(cancelled)
	if !hasKind(evs, events.KindToolCompleted, events.CodeCancelled) {
		t.Fatalf("cancelled request's events: %v", kindsOf(evs))
	}
}

// rawSession drives the binary through bare pipes and returns every stdout
// line and the exit code.
func rawSession(t *testing.T, data string, lines ...string) ([]string, int, string) {
	t.Helper()
	cmd := exec.Command(tbTestBin, "--data", data, "mcp")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir())
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var got []string
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 8<<20)
		for sc.Scan() {
			got = append(got, sc.Text())
		}
	}()
	for _, l := range lines {
		if _, err := in.Write([]byte(l + "\n")); err != nil {
			break // the bridge closed the session
		}
		time.Sleep(50 * time.Millisecond) // let each answer go out in order
	}
	in.Close()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("the bridge did not end the session; stderr:\n%s", stderr.String())
	}
	cmd.Wait()
	return got, cmd.ProcessState.ExitCode(), stderr.String()
}

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}`

// A malformed line or an over-limit frame ends the session cleanly, the
// abort is recorded, and every byte on stdout was a JSON-RPC frame, even
// with a tool writing to fd 1 before it.
func TestMCPBadFramesEndTheSessionCleanly(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		code       events.Code
	}{
		{"malformed", `{"jsonrpc":"2.0","id":9,"method":`, events.CodeMalformedFrame},
		{"over the limit", `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"regex_text_search","arguments":{"text":"` + strings.Repeat("a", 5<<20) + `"}}}`, events.CodeTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			lines, exit, stderr := rawSession(t, data, initLine,
				`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
				`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_stdout","arguments":{}}}`,
				tc.line,
				`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`)
			// The session failed, so the exit is 1, with the reason and no crash.
			if exit != 1 || strings.Contains(stderr, "goroutine ") || !strings.Contains(stderr, "tracebridge mcp:") {
				t.Fatalf("exit %d; stderr:\n%s", exit, stderr)
			}
			if len(lines) < 2 {
				t.Fatalf("stdout %q", lines)
			}
			for _, l := range lines {
				var m struct {
					JSONRPC string          `json:"jsonrpc"`
					ID      json.RawMessage `json:"id"`
					Method  string          `json:"method"`
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil || m.JSONRPC != "2.0" || m.Method == "forged" {
					t.Fatalf("stdout line is not one of our JSON-RPC frames: %q", l)
				}
			}
			st := readStore(t, data)
			all, _ := st.Range(1, 10000)
			if !hasKind(all, events.KindMCPSessionAborted, tc.code) {
				t.Fatalf("no %s(%s) event: %v", events.KindMCPSessionAborted, tc.code, kindsOf(all))
			}
			if rep, _ := st.Verify(); !rep.OK() {
				t.Fatal(rep)
			}
		})
	}
}

// writeConfig writes a tracebridge.toml and returns the env that selects it.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tracebridge.toml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return "TRACEBRIDGE_CONFIG=" + p
}

// Policy denial, approval denial, approval timeout and an unresolved secret
// stop test_write (a side-effecting tool that creates a file) before it
// runs; an operator's approval through the real CLI lets it run.
func TestMCPDenialsNeverRunTheTool(t *testing.T) {
	cases := []struct {
		name, cfg string
		code      events.Code
	}{
		{"capability not granted", "", events.CodePolicyDenied},
		{"approval mode deny", "[approval]\nmode = \"deny\"\n[policy]\ngrant = [\"workspace.write\"]\n", events.CodeApprovalDenied},
		{"approval timeout", "[approval]\nmode = \"prompt\"\ntimeout = \"300ms\"\n[policy]\ngrant = [\"workspace.write\"]\n", events.CodeApprovalTimeout},
		{"unresolved secret", "[policy]\ngrant = [\"workspace.write\"]\n[tools.test_write]\nsecrets = [\"KEY\"]\n[secrets.KEY]\nenv = \"TB_UNSET_FOR_TEST\"\n", events.CodeSecretUnresolved},
		{"broken config", "[approval]\nmode = \"perhaps\"\n", events.CodeConfigInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			marker := filepath.Join(t.TempDir(), "ran")
			b := startBridge(t, tbTestBin, data, "2025-06-18", writeConfig(t, tc.cfg))
			res, req, code := b.call(t, "test_write", map[string]any{"marker": marker})
			if code != tc.code {
				t.Fatalf("code %q, want %q: %s", code, tc.code, textOf(res))
			}
			if _, err := os.Stat(marker); !os.IsNotExist(err) {
				t.Fatal("the tool ran")
			}
			b.close(t)
			evs := requestEvents(t, data, req)
			if hasKind(evs, events.KindToolStarted, "") {
				t.Fatalf("tool.started recorded: %v", kindsOf(evs))
			}
			var env map[string]any
			for _, e := range evs {
				if e.Kind == events.KindExecutorAudit {
					json.Unmarshal([]byte(e.Attrs.Get("envelope")), &env)
				}
			}
			if env["code"] != string(tc.code) {
				t.Fatalf("audit envelope %v", env)
			}
		})
	}
	t.Run("approved by an operator", func(t *testing.T) {
		data := filepath.Join(t.TempDir(), "data")
		marker := filepath.Join(t.TempDir(), "ran")
		b := startBridge(t, tbTestBin, data, "2025-06-18", writeConfig(t, "[approval]\nmode = \"prompt\"\ntimeout = \"30s\"\n[policy]\ngrant = [\"workspace.write\"]\n"))
		go func() {
			for i := 0; i < 200; i++ {
				out, _ := exec.Command(tbBin, "--data", data, "approvals", "list", "--json").Output()
				var pending []struct{ ID, Tool string }
				json.Unmarshal(out, &pending)
				if len(pending) == 1 && pending[0].Tool == "test_write" {
					// The table names the waiting call's request, as the
					// commands that read it take it.
					table, _ := exec.Command(tbBin, "--data", data, "approvals", "list").Output()
					req := strings.Fields(strings.Split(string(table), "\n")[1])[1]
					if !strings.Contains(string(table), "REQUEST") || len(req) != 26 || exec.Command(tbBin, "--data", data, "tail", "--request", req).Run() != nil {
						t.Errorf("approvals list names no request that tail --request reads:\n%s", table)
					}
					exec.Command(tbBin, "--data", data, "approvals", "approve", pending[0].ID, "--reason", "looks fine").Run()
					return
				}
				time.Sleep(50 * time.Millisecond)
			}
		}()
		res, _, code := b.call(t, "test_write", map[string]any{"marker": marker})
		if code != "" {
			t.Fatalf("approved call: %s %s", code, textOf(res))
		}
		if _, err := os.Stat(marker); err != nil {
			t.Fatal("the approved tool did not run")
		}
		b.close(t)
	})
}

// A secret resolved to a random canary, echoed through arguments, results,
// errors and a panic, never reaches the store, stderr or the log files, in
// any encoding.
func TestMCPSecretCanary(t *testing.T) {
	canary := fmt.Sprintf("cnry-%016x", rand.Uint64())
	t.Logf("canary %s", canary)
	data := filepath.Join(t.TempDir(), "data")
	cfg := writeConfig(t, "[tools.test_echo]\nsecrets = [\"API\"]\n[tools.test_panic]\nsecrets = [\"API\"]\n[tools.regex_text_search]\nsecrets = [\"API\"]\n[secrets.API]\nenv = \"TB_CANARY\"\n")
	b := startBridge(t, tbTestBin, data, "2025-06-18", cfg, "TB_CANARY="+canary)
	res, _, code := b.call(t, "test_echo", map[string]any{"text": "echo " + canary})
	if code != "" || !strings.Contains(textOf(res), canary) {
		t.Fatalf("the tool did not receive the secret: %s %s", code, textOf(res))
	}
	b.call(t, "test_panic", map[string]any{"text": canary})
	b.call(t, "regex_text_search", map[string]any{"pattern": "(" + canary, "text": base64.StdEncoding.EncodeToString([]byte(canary))})
	b.close(t)
	needles := []string{canary, hex.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString([]byte(canary))[:12]}
	haystacks := map[string][]byte{"stderr": []byte(b.stderr.String())}
	haystacks["store"], _ = os.ReadFile(filepath.Join(data, "events.db"))
	logs, _ := filepath.Glob(filepath.Join(data, "logs", "*.log"))
	if len(logs) == 0 {
		t.Fatal("no log file in the data dir")
	}
	for _, l := range logs {
		haystacks[l], _ = os.ReadFile(l)
	}
	for where, hay := range haystacks {
		for _, n := range needles {
			if strings.Contains(string(hay), n) {
				t.Errorf("canary form %q found in %s", n, where)
			}
		}
	}
	if !strings.Contains(string(haystacks["store"]), "[REDACTED:secret:") {
		t.Fatal("no redaction marker in the store: nothing was recorded")
	}
}

// With a log that refuses writes, side-effecting tools are refused and
// read-only tools follow policy (allowed by default).
func TestMCPRefusesSideEffectsWithoutALog(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	// A store whose tail is broken: the hub refuses every append.
	fill := exec.Command(tbBin, "--data", data, "loadgen", "--requests", "2")
	if out, err := fill.CombinedOutput(); err != nil {
		t.Fatalf("%v %s", err, out)
	}
	db, err := bolt.Open(filepath.Join(data, "events.db"), 0o600, &bolt.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte("events")).Cursor()
		k, _ := c.Last()
		return tx.Bucket([]byte("events")).Delete(k)
	})
	db.Close()
	marker := filepath.Join(t.TempDir(), "ran")
	b := startBridge(t, tbTestBin, data, "2025-06-18",
		writeConfig(t, "[approval]\nmode = \"allow\"\n[policy]\ngrant = [\"text.search\", \"workspace.write\"]\n"))
	_, _, code := b.call(t, "test_write", map[string]any{"marker": marker})
	if code != events.CodeLogUnavailable {
		t.Fatalf("side-effecting tool without a log: %q", code)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the tool ran without evidence")
	}
	if _, _, code := b.call(t, "regex_text_search", map[string]any{"query": "a", "text": "a"}); code != "" {
		t.Fatalf("read-only tool without a log: %q", code)
	}
	b.close(t)
}

// Two AI clients on one data dir: both work, through one hub.
func TestMCPTwoClientsShareOneHub(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	a := startBridge(t, tbBin, data, "2025-06-18")
	b := startBridge(t, tbBin, data, "")
	var reqs []events.ID
	for i := 0; i < 5; i++ {
		for _, br := range []*mcpChild{a, b} {
			_, req, code := br.call(t, "regex_text_search", map[string]any{"query": "x", "text": fmt.Sprint("x", i)})
			if code != "" {
				t.Fatal(code)
			}
			reqs = append(reqs, req)
		}
	}
	info, err := os.ReadFile(filepath.Join(data, "hub.json"))
	if err != nil {
		t.Fatal(err)
	}
	a.close(t)
	b.close(t)
	for i, r := range reqs {
		want := 8
		if i < 2 { // each session's first call asks the client for its roots
			want = 9
		}
		if n := len(requestEvents(t, data, r)); n != want {
			t.Fatalf("request %s has %d events, want %d", r, n, want)
		}
	}
	if !strings.Contains(string(info), `"pid"`) {
		t.Fatalf("hub.json %s", info)
	}
	verifyStore(t, data)
}

// Discovery is opt-in: with a directory configured, a good manifest becomes a
// tool that runs as a subprocess through the executor, and the bad manifest
// and the missing directory are recorded as events with codes.
func TestMCPDiscoveredTools(t *testing.T) {
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "wc.sh"), []byte("#!/bin/sh\nprintf '{\"bytes\":%s}' \"$(wc -c | tr -d ' ')\"\n"), 0o755)
	os.WriteFile(filepath.Join(tools, "wc.tool.json"), []byte(`{"id":"byte_count","description":"counts the bytes of its arguments",
		"command":["./wc.sh"],"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"sideEffects":false,"approval":"never"}`), 0o644)
	os.WriteFile(filepath.Join(tools, "bad.tool.json"), []byte(`{"id":"bad"}`), 0o644)
	data := filepath.Join(t.TempDir(), "data")
	cfg := fmt.Sprintf("[discovery]\ndirs = [%q, %q]\n", tools, filepath.Join(tools, "missing"))
	// Without process.run granted, a discovered tool is listed but denied.
	b := startBridge(t, tbBin, data, "2025-06-18", writeConfig(t, cfg))
	if _, _, code := b.call(t, "byte_count", map[string]any{"text": "abc"}); code != events.CodePolicyDenied {
		t.Fatalf("discovered tool without process.run: %q", code)
	}
	b.close(t)
	b = startBridge(t, tbBin, data, "2025-06-18", writeConfig(t, cfg+"[policy]\ngrant = [\"text.search\", \"process.run\"]\n"))
	res, _, code := b.call(t, "byte_count", map[string]any{"text": "abc"})
	if code != "" || !strings.Contains(textOf(res), `"bytes":14`) {
		t.Fatalf("discovered tool: %s %s", code, textOf(res))
	}
	b.close(t)
	st := readStore(t, data)
	all, _ := st.Range(1, 10000)
	if !hasKind(all, events.KindToolsDiscovered, events.CodeInvalidManifest) || !hasKind(all, events.KindToolsDiscovered, events.CodeDirMissing) {
		t.Fatalf("discovery findings not recorded: %v", kindsOf(all))
	}
	found := false
	for _, e := range all {
		if e.Kind == events.KindToolsDiscovered && e.Code == "" && e.Attrs.Get("count") == "1" {
			found = true
		}
	}
	if !found {
		t.Fatal("no event counting the discovered tool")
	}
}

// An AI session reads the evidence of earlier runs: trace_runs lists them
// with their verdicts, trace_replay and trace://runs/{id} reconstruct one,
// trace_diagram draws it.
func TestMCPTraceTools(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18", writeConfig(t, "[policy]\ndeny = [\"bm25_text_search\"]\n"))
	_, denied, code := b.call(t, "bm25_text_search", map[string]any{"query": "q", "entries": []map[string]string{{"id": "a", "text": "q"}}})
	if code != events.CodePolicyDenied {
		t.Fatalf("bm25: %s", code)
	}
	res, _, code := b.call(t, "trace_runs", map[string]any{"status": "denied"})
	if code != "" || !strings.Contains(textOf(res), denied.String()) || !strings.Contains(textOf(res), `"code":"PolicyDenied"`) {
		t.Fatalf("trace_runs: %s %s", code, textOf(res))
	}
	res, _, code = b.call(t, "trace_replay", map[string]any{"requestId": denied.String()})
	if code != "" || !strings.Contains(textOf(res), `"status":"denied"`) || !strings.Contains(textOf(res), `"boundary":"policy"`) {
		t.Fatalf("trace_replay: %s %s", code, textOf(res))
	}
	res, _, code = b.call(t, "trace_diagram", map[string]any{"requestId": denied.String()})
	if code != "" || !strings.Contains(textOf(res), "sequenceDiagram") || !strings.Contains(textOf(res), "PolicyDenied") {
		t.Fatalf("trace_diagram: %s %s", code, textOf(res))
	}
	if _, _, code = b.call(t, "trace_replay", map[string]any{"requestId": "nope"}); code != events.CodeInvalidArguments {
		t.Fatalf("trace_replay of a bad id: %s", code)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rr, err := b.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "trace://runs/" + denied.String()})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"code": "PolicyDenied"`) {
		t.Fatalf("read trace://runs/%s: %v %+v", denied, err, rr)
	}
}
