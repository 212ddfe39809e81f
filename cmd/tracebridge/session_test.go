package main

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

var record = flag.Bool("record", false, "write the recorded sessions into artifacts/sessions")

// sessionScenario is one recorded session: what the client calls, with
// which configuration, against which workspace, and what the operator does.
type sessionScenario struct {
	name   string
	config string
	host   bool
	env    []string // the bridge's environment beyond the config
	drive  func(t *testing.T, r *recording)
}

// recording is a live scenario: a data dir, maybe a host, one bridge.
type recording struct {
	data, ws string
	b        *mcpChild
}

func (r *recording) cli(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(tbBin, append([]string{"--data", r.data}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("tracebridge %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// exportLast exports, with the real CLI, the session of the latest call of
// tool to file, named name.
func (r *recording) exportLast(t *testing.T, tool, file, name string) {
	t.Helper()
	var run struct {
		SessionID string `json:"sessionId"`
	}
	line := strings.SplitN(r.cli(t, "runs", "--json", "--limit", "1", "--tool", tool), "\n", 2)[0]
	if err := json.Unmarshal([]byte(line), &run); err != nil || run.SessionID == "" {
		t.Fatalf("runs: %q %v", line, err)
	}
	r.cli(t, "session", "export", run.SessionID, "-o", file, "--name", name)
}

// decideOnly approves or rejects the one pending proposal with the real CLI.
func (r *recording) decideOnly(t *testing.T, verb string) string {
	t.Helper()
	var props []struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(r.cli(t, "proposals", "list", "--json")), &props); err != nil || len(props) == 0 {
		t.Fatalf("proposals list: %v %v", props, err)
	}
	out, err := exec.Command(tbBin, "--data", r.data, "proposals", verb, props[len(props)-1].ID).CombinedOutput()
	if err != nil && !strings.Contains(string(out), "Drift") {
		t.Fatalf("proposals %s: %v\n%s", verb, err, out)
	}
	return string(out)
}

// approvalPrompt makes regex_text_search wait for an operator.
// The upstream scenarios run the npm servers installed under testdata
// (everything by a path relative to this package, the bridge's working
// directory; the filesystem server in the recording's workspace, which it
// serves). A re-drive starts neither: it answers from the recording.
const everythingConfig = "[servers.everything]\ncommand = \"node\"\nargs = [\"testdata/upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js\", \"stdio\"]\n"

const filesystemConfig = approvalPrompt + "[policy]\ndeny = [\"fs__move_file\"]\n[servers.fs]\ncommand = \"node\"\nargs = [\"$FSJS\", \".\"]\ncwd = \"$WS\"\n"

// stockConfig runs the stock npm servers of the upstream-stock scenario;
// idle is listed and never called.
const stockConfig = "[approval]\nmode = \"prompt\"\ntimeout = \"30s\"\n" +
	"[servers.thinking]\ncommand = \"node\"\nargs = [\"testdata/upstreams/node_modules/@modelcontextprotocol/server-sequential-thinking/dist/index.js\"]\n" +
	"[servers.memory]\ncommand = \"node\"\nargs = [\"testdata/upstreams/node_modules/@modelcontextprotocol/server-memory/dist/index.js\"]\nenv = { MEMORY_FILE_PATH = \"$WS/memory.jsonl\" }\n" +
	"[servers.everything]\ncommand = \"node\"\nargs = [\"testdata/upstreams/node_modules/@modelcontextprotocol/server-everything/dist/index.js\", \"stdio\"]\n" +
	"[servers.idle]\ncommand = \"node\"\nargs = [\"$FSJS\", \"$WS\"]\n"

// goplsConfig puts gopls's own MCP server (gopls ≥ 0.23: `gopls mcp`)
// behind the gateway, in the recording's workspace (the README's recipe,
// with its commented deny).
const goplsConfig = "[servers.gopls]\ncommand = \"$GOPLS\"\nargs = [\"mcp\"]\ncwd = \"$WS\"\nread_only = [\"go_*\"]\ndeny = [\"go_rename_symbol\"]\n"

const approvalPrompt = "[approval]\nmode = \"prompt\"\ntimeout = \"30s\"\n[tools.regex_text_search]\napproval = \"always\"\n"

// answerApproval waits for the one call waiting for approval and answers
// it with the real CLI.
func (r *recording) answerApproval(t *testing.T, verb, reason string) {
	for i := 0; i < 400; i++ {
		out, _ := exec.Command(tbBin, "--data", r.data, "approvals", "list", "--json").Output()
		var pending []struct{ ID string }
		json.Unmarshal(out, &pending)
		if len(pending) == 1 {
			exec.Command(tbBin, "--data", r.data, "approvals", verb, pending[0].ID, "--reason", reason).Run()
			return
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func sessionScenarios() []sessionScenario {
	propose := map[string]any{"path": "svc/price.go", "original": "return 100", "replacement": "return 120"}
	return []sessionScenario{
		{name: "read-ok", host: true, drive: func(t *testing.T, r *recording) {
			r.cli(t, "focus", "svc/price.go:4:6-4:11")
			for _, tool := range []string{"get_active_document", "get_selection", "list_projects"} {
				if _, _, code := r.b.call(t, tool, map[string]any{}); code != "" {
					t.Fatalf("%s: %s", tool, code)
				}
			}
		}},
		{name: "proposal-applied", host: true, drive: func(t *testing.T, r *recording) {
			if _, _, code := r.b.call(t, "propose_text_edit", propose); code != "" {
				t.Fatalf("propose: %s", code)
			}
			r.decideOnly(t, "approve")
			if b, _ := os.ReadFile(filepath.Join(r.ws, "svc", "price.go")); !strings.Contains(string(b), "return 120") {
				t.Fatalf("not applied: %s", b)
			}
		}},
		{name: "proposal-rejected", host: true, drive: func(t *testing.T, r *recording) {
			r.b.call(t, "propose_text_edit", propose)
			r.decideOnly(t, "reject")
		}},
		{name: "proposal-drift", host: true, drive: func(t *testing.T, r *recording) {
			r.b.call(t, "propose_text_edit", propose)
			os.WriteFile(filepath.Join(r.ws, "svc", "price.go"), []byte("package svc\n\n// edited by hand\nfunc Price() int { return 100 }\n"), 0o644)
			if out := r.decideOnly(t, "approve"); !strings.Contains(out, "Drift") {
				t.Fatalf("approve after an edit: %s", out)
			}
		}},
		{name: "policy-denied", config: "[policy]\ndeny = [\"bm25_text_search\"]\n", drive: func(t *testing.T, r *recording) {
			if _, _, code := r.b.call(t, "bm25_text_search", map[string]any{"query": "cat", "entries": []map[string]string{{"id": "a", "text": "the cat"}}}); code != events.CodePolicyDenied {
				t.Fatalf("bm25: %s", code)
			}
			if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"pattern": "cat", "entries": []map[string]string{{"id": "a", "text": "the cat"}}}); code != "" {
				t.Fatalf("regex: %s", code)
			}
		}},
		{name: "approval-timeout", config: "[approval]\nmode = \"prompt\"\ntimeout = \"50ms\"\n[tools.regex_text_search]\napproval = \"always\"\n", drive: func(t *testing.T, r *recording) {
			if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"pattern": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}}); code != events.CodeApprovalTimeout {
				t.Fatalf("regex: %s", code)
			}
		}},
		{name: "secret-unresolved", config: "[secrets.search_key]\nenv = \"TRACEBRIDGE_TEST_UNSET_KEY\"\n[tools.regex_text_search]\nsecrets = [\"search_key\"]\n", drive: func(t *testing.T, r *recording) {
			if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"pattern": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}}); code != events.CodeSecretUnresolved {
				t.Fatalf("regex: %s", code)
			}
		}},
		{name: "approval-approved", config: approvalPrompt, drive: func(t *testing.T, r *recording) {
			go r.answerApproval(t, "approve", "looks fine")
			if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"pattern": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}}); code != "" {
				t.Fatalf("approved call: %s", code)
			}
		}},
		{name: "approval-denied", config: approvalPrompt, drive: func(t *testing.T, r *recording) {
			go r.answerApproval(t, "deny", "not now")
			if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"pattern": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}}); code != events.CodeApprovalDenied {
				t.Fatalf("denied call: %s", code)
			}
		}},
		{name: "trace-tools", drive: func(t *testing.T, r *recording) {
			_, req, _ := r.b.call(t, "regex_text_search", map[string]any{"pattern": "(", "text": "x"})
			for _, tool := range []string{"trace_replay", "trace_diagram"} {
				if res, _, code := r.b.call(t, tool, map[string]any{"requestId": req.String()}); code != "" {
					t.Fatalf("%s: %s %s", tool, code, textOf(res))
				}
			}
		}},
		{name: "secret-redacted", config: "[secrets.search_key]\nenv = \"TRACEBRIDGE_TEST_SECRET\"\n[tools.regex_text_search]\nsecrets = [\"search_key\"]\n",
			env: []string{"TRACEBRIDGE_TEST_SECRET=s3cr3t-for-the-recording"}, drive: func(t *testing.T, r *recording) {
				// The call carries the secret itself: the recording keeps only its marker.
				if _, _, code := r.b.call(t, "regex_text_search", map[string]any{"query": "s3cr3t-for-the-recording", "text": "x"}); code != "" {
					t.Fatalf("regex: %s", code)
				}
			}},
		{name: "upstream-everything", config: everythingConfig, drive: func(t *testing.T, r *recording) {
			if res, _, code := r.b.call(t, "everything__echo", map[string]any{"message": "recorded"}); code != "" || !strings.Contains(textOf(res), "recorded") {
				t.Fatalf("echo: %s", code)
			}
			if _, _, code := r.b.call(t, "everything__get-sum", map[string]any{"a": 20, "b": 22}); code != "" {
				t.Fatalf("get-sum: %s", code)
			}
		}},
		{name: "upstream-filesystem", host: true, config: filesystemConfig, drive: func(t *testing.T, r *recording) {
			// write_file has no readOnlyHint: it waits for an operator.
			go r.answerApproval(t, "approve", "new notes file")
			if _, _, code := r.b.call(t, "fs__write_file", map[string]any{"path": "notes.txt", "content": "from the recording\n"}); code != "" {
				t.Fatalf("write_file: %s", code)
			}
			if _, _, code := r.b.call(t, "fs__move_file", map[string]any{"source": "notes.txt", "destination": "moved.txt"}); code != events.CodePolicyDenied {
				t.Fatalf("move_file: %s", code)
			}
			if res, _, code := r.b.call(t, "fs__read_text_file", map[string]any{"path": "notes.txt"}); code != "" || !strings.Contains(textOf(res), "from the recording") {
				t.Fatalf("read_text_file: %s %s", code, textOf(res))
			}
		}},
		{name: "upstream-stock", config: stockConfig, drive: func(t *testing.T, r *recording) {
			// The stock npm servers people run: a 4.6 KB descriptor, an
			// approved and a denied write, an answer over 4 KiB, a prompt,
			// a resource, and a server listed but never called.
			if _, _, code := r.b.call(t, "thinking__sequentialthinking", map[string]any{"thought": "Recorded sessions must re-drive.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false}); code != "" {
				t.Fatalf("sequentialthinking: %s", code)
			}
			go r.answerApproval(t, "approve", "a note for the graph")
			long := strings.Repeat("Every crossing is evidence. ", 200)
			if _, _, code := r.b.call(t, "memory__create_entities", map[string]any{"entities": []any{map[string]any{"name": "tracebridge", "entityType": "project", "observations": []any{long}}}}); code != "" {
				t.Fatalf("create_entities: %s", code)
			}
			go r.answerApproval(t, "deny", "keep the graph")
			if _, _, code := r.b.call(t, "memory__delete_entities", map[string]any{"entityNames": []any{"tracebridge"}}); code != events.CodeApprovalDenied {
				t.Fatalf("delete_entities: %s", code)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if _, err := r.b.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "everything__simple-prompt"}); err != nil {
				t.Fatalf("prompts/get: %v", err)
			}
			if _, err := r.b.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"}); err != nil {
				t.Fatalf("resources/read: %v", err)
			}
			if res, _, code := r.b.call(t, "memory__read_graph", map[string]any{}); code != "" || len(textOf(res)) < 4096 {
				t.Fatalf("read_graph: %s, %d bytes", code, len(textOf(res)))
			}
		}},
		{name: "upstream-gopls", config: goplsConfig, drive: func(t *testing.T, r *recording) {
			// gopls answers about the workspace it runs in; a re-drive
			// needs no gopls.
			os.WriteFile(filepath.Join(r.ws, "svc", "total.go"), []byte("package svc\n\n// Total is two of them.\nfunc Total() int { return 2 * Price() }\n"), 0o644)
			if res, _, code := r.b.call(t, "gopls__go_workspace", map[string]any{}); code != "" || !strings.Contains(textOf(res), "example.com/demo") {
				t.Fatalf("go_workspace: %s %s", code, textOf(res))
			}
			if res, _, code := r.b.call(t, "gopls__go_search", map[string]any{"query": "Price"}); code != "" || !strings.Contains(textOf(res), "Price") {
				t.Fatalf("go_search: %s %s", code, textOf(res))
			}
			if _, _, code := r.b.call(t, "gopls__go_rename_symbol", map[string]any{"file": filepath.Join(r.ws, "svc", "price.go"), "symbol": "Price", "new_name": "Cost"}); code != events.CodeUnknownTool {
				t.Fatalf("go_rename_symbol: %s, want UnknownTool (deny hides it)", code)
			}
			if res, _, code := r.b.call(t, "gopls__go_symbol_references", map[string]any{"file": filepath.Join(r.ws, "svc", "price.go"), "symbol": "Price"}); code != "" || !strings.Contains(textOf(res), "total.go") {
				t.Fatalf("go_symbol_references: %s %s", code, textOf(res))
			}
		}},
		{name: "discovered-tool", config: "[discovery]\ndirs = [\"$TOOLS\"]\n[policy]\ngrant = [\"text.search\", \"process.run\"]\n", drive: func(t *testing.T, r *recording) {
			// A re-drive runs no process: it answers with the recorded result.
			if res, _, code := r.b.call(t, "byte_count", map[string]any{"text": "abc"}); code != "" || !strings.Contains(textOf(res), `"bytes":14`) {
				t.Fatalf("byte_count: %s %s", code, textOf(res))
			}
		}},
		{name: "host-missing", drive: func(t *testing.T, r *recording) {
			if _, _, code := r.b.call(t, "get_selection", map[string]any{}); code != events.CodePipeUnavailable {
				t.Fatalf("get_selection: %s", code)
			}
		}},
		{name: "review-modes", host: true, drive: func(t *testing.T, r *recording) {
			for _, args := range []map[string]any{
				{"mode": "replace", "content": "# Review\n\n## Pricing\n\nThe price is set in [svc/price.go:4][].\n"},
				{"mode": "append", "content": "## Risks\n\nNone yet."},
				{"mode": "update-section", "section": "Pricing", "content": "Moves to 120 cents: [svc/price.go:4][]."},
				{"mode": "update-section", "content": "no section"},
			} {
				r.b.call(t, "present_review", args)
			}
		}},
	}
}

// TestRecordedSessions records each scenario through the real binaries (a
// host, `tracebridge mcp`, the operator CLI), exports the session with
// `tracebridge session export`, and re-drives the file with `tracebridge
// session replay`: a fresh recording must replay with no drift. With
// -record the files replace artifacts/sessions/*.jsonl.
func TestRecordedSessions(t *testing.T) {
	long(t)
	for _, sc := range sessionScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			base := t.TempDir()
			r := &recording{data: filepath.Join(base, "data"), ws: filepath.Join(base, "ws")}
			os.MkdirAll(filepath.Join(r.ws, "svc"), 0o755)
			os.WriteFile(filepath.Join(r.ws, "go.mod"), []byte("module example.com/demo\n"), 0o644)
			os.WriteFile(filepath.Join(r.ws, "svc", "price.go"), []byte("package svc\n\n// Price returns the price in cents.\nfunc Price() int { return 100 }\n"), 0o644)
			var host *proc
			if sc.host {
				host = start(t, tbBin, r.data, "up", "--root", r.ws)
				eventually(t, 10*time.Second, "the host socket", func() bool {
					_, err := os.Stat(filepath.Join(r.data, "run", "host.sock"))
					return err == nil
				})
			}
			cfg := filepath.Join(base, "tracebridge.toml")
			// A discovered tool for the scenario that configures discovery.
			tools := filepath.Join(base, "tools")
			os.MkdirAll(tools, 0o755)
			os.WriteFile(filepath.Join(tools, "wc.sh"), []byte("#!/bin/sh\nprintf '{\"bytes\":%s}' \"$(wc -c | tr -d ' ')\"\n"), 0o755)
			os.WriteFile(filepath.Join(tools, "wc.tool.json"), []byte(`{"id":"byte_count","description":"counts the bytes of its arguments",
				"command":["./wc.sh"],"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"sideEffects":false,"approval":"never"}`), 0o644)
			fsjs, _ := filepath.Abs(filepath.Join("testdata", "upstreams", "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"))
			gopls := ""
			if strings.Contains(sc.config, "$GOPLS") {
				gopls = testenv.Gopls(t)
			}
			os.WriteFile(cfg, []byte(strings.NewReplacer("$WS", r.ws, "$FSJS", fsjs, "$TOOLS", tools, "$GOPLS", gopls).Replace(sc.config)), 0o600)
			r.b = startBridge(t, tbBin, r.data, "2025-06-18", append([]string{"TRACEBRIDGE_CONFIG=" + cfg, "TRACEBRIDGE_TEST_UNSET_KEY="}, sc.env...)...)
			sc.drive(t, r)
			r.b.close(t)
			if host != nil {
				host.cmd.Process.Signal(os.Interrupt)
				host.wait(t, 10*time.Second)
			}
			var run struct {
				SessionID string `json:"sessionId"`
			}
			line := strings.SplitN(r.cli(t, "runs", "--json", "--limit", "1", "--tool", toolOfLastCall(sc.name)), "\n", 2)[0]
			if err := json.Unmarshal([]byte(line), &run); err != nil || run.SessionID == "" {
				t.Fatalf("runs: %q %v", line, err)
			}
			file := filepath.Join(base, sc.name+".jsonl")
			// No --config: the session carries the configuration the bridge
			// recorded when it started.
			r.cli(t, "session", "export", run.SessionID, "-o", file, "--name", sc.name)
			if out := r.cli(t, "session", "list"); !strings.Contains(out, run.SessionID) || !strings.Contains(out, "e2e/1.0") {
				t.Fatalf("session list lacks the session:\n%s", out)
			}
			if out := r.cli(t, "session", "export", run.SessionID, "-o", "-"); !strings.HasPrefix(out, `{"schema":"tracebridge.session/v1"`) {
				t.Fatalf("session export -o - did not write the session to stdout: %.200s", out)
			}
			if b, _ := os.ReadFile(file); strings.Contains(string(b), "s3cr3t-for-the-recording") {
				t.Fatal("the exported session holds a secret in the clear")
			}
			out, err := exec.Command(tbBin, "session", "replay", file).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "no drift") {
				b, _ := os.ReadFile(file)
				t.Fatalf("a fresh recording does not replay cleanly: %v\n%s\nfile:\n%s", err, out, b)
			}
			if *record {
				b, _ := os.ReadFile(file)
				if err := os.WriteFile(filepath.Join("..", "..", "artifacts", "sessions", sc.name+".jsonl"), b, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func toolOfLastCall(name string) string {
	return map[string]string{"read-ok": "list_projects", "proposal-applied": "propose_text_edit", "proposal-rejected": "propose_text_edit",
		"proposal-drift": "propose_text_edit", "policy-denied": "regex_text_search", "approval-timeout": "regex_text_search",
		"secret-unresolved": "regex_text_search", "host-missing": "get_selection", "review-modes": "present_review",
		"approval-approved": "regex_text_search", "secret-redacted": "regex_text_search", "approval-denied": "regex_text_search", "trace-tools": "trace_diagram",
		"upstream-everything": "everything__get-sum", "upstream-filesystem": "fs__read_text_file", "upstream-stock": "memory__read_graph",
		"upstream-gopls": "gopls__go_symbol_references", "discovered-tool": "byte_count"}[name]
}

// TestCommittedArtifactsAreCurrent regenerates the triads of every recorded
// session in artifacts/sessions and compares them, byte for byte, with the
// committed ones: a change in behaviour shows as drift (the replay fails),
// a change in rendering as a stale triad. `make artifacts` regenerates.
func TestCommittedArtifactsAreCurrent(t *testing.T) {
	repo := filepath.Join("..", "..")
	files, _ := filepath.Glob(filepath.Join(repo, "artifacts", "sessions", "*.jsonl"))
	if len(files) < 6 {
		t.Fatalf("artifacts/sessions holds %d recorded sessions; want at least 6", len(files))
	}
	root := t.TempDir()
	out, err := exec.Command(tbBin, append([]string{"session", "replay", "--artifacts", root}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("the recorded sessions drifted (make sessions re-records, session replay --update accepts):\n%s", out)
	}
	for _, sub := range []string{filepath.Join("artifacts", "logs"), filepath.Join("docs", "diagrams")} {
		want, _ := filepath.Glob(filepath.Join(root, sub, "*"))
		have, _ := filepath.Glob(filepath.Join(repo, sub, "*"))
		if len(want) != len(have) {
			t.Errorf("%s: %d files committed, regenerating gives %d: run make artifacts", sub, len(have), len(want))
		}
		for _, w := range want {
			got, err := os.ReadFile(filepath.Join(repo, sub, filepath.Base(w)))
			exp, _ := os.ReadFile(w)
			if err != nil || string(got) != string(exp) {
				t.Errorf("%s/%s is stale or missing: run make artifacts", sub, filepath.Base(w))
			}
		}
	}
}

// B7: session list's limit counts the sessions it shows: a burst of newer
// synthetic sessions (no MCP client opened them) does not hide the real one;
// --all shows them, within the limit.
func TestSessionListLimitsWhatItShows(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-11-25")
	b.close(t)
	if out, err := exec.Command(tbBin, "--data", data, "loadgen", "--requests", "30", "--yes").CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	out := tbRun(t, data, "session", "list", "-n", "3")
	if lines := strings.Count(strings.TrimSpace(out), "\n"); lines != 1 || !strings.Contains(out, "e2e/1.0") {
		t.Fatalf("session list -n 3 after 30 synthetic sessions, want the one real session:\n%s", out)
	}
	if out := tbRun(t, data, "session", "list", "-n", "3", "--all"); strings.Count(strings.TrimSpace(out), "\n") != 3 {
		t.Fatalf("session list -n 3 --all, want 3 sessions:\n%s", out)
	}
}
