package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// A session with the stock npm servers people run behind the gateway —
// server-sequential-thinking (its descriptor is 4.6 KB), server-memory
// (an approved and a denied write, reads), server-everything (a 4 KiB+
// answer, a prompt, a resource) and server-filesystem listed but never
// called — exports whole and re-drives with no node on PATH and no drift;
// a mutated answer (what the client gets differs from what it got) and a
// mutated request drift, each shown where it differs.
func TestStockServersSessionRedrives(t *testing.T) {
	long(t)
	thinking, memory := npmServer(t, "server-sequential-thinking"), npmServer(t, "server-memory")
	everything, filesystem := npmServer(t, "server-everything"), npmServer(t, "server-filesystem")
	dir := t.TempDir()
	cfg := writeConfig(t, fmt.Sprintf(`
[approval]
mode = "prompt"
timeout = "60s"

[servers.thinking]
command = "node"
args = [%q]

[servers.memory]
command = "node"
args = [%q]
env = { MEMORY_FILE_PATH = %q }

[servers.everything]
command = "node"
args = [%q, "stdio"]

[servers.idle]
command = "node"
args = [%q, %q]
`, thinking, memory, filepath.Join(dir, "memory.jsonl"), everything, filesystem, dir))
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-11-25", cfg)
	names := toolNames(t, b.session)
	// The guard's pack holds none of the stock servers' tools (0 false
	// positives on descriptors people run).
	if out, err := exec.Command(tbBin, "--data", data, "tools", "list", "--state", "flagged").CombinedOutput(); err != nil || !strings.Contains(string(out), "no pinned tool is flagged") {
		t.Errorf("the guard held a stock server's tool: %v\n%s", err, out)
	}
	for _, want := range []string{"thinking__sequentialthinking", "memory__create_entities", "memory__read_graph", "everything__get-env", "idle__list_directory"} {
		if !slices.Contains(names, want) {
			t.Fatalf("tools/list lacks %s: %v", want, names)
		}
	}
	call := func(tool string, args map[string]any) string {
		t.Helper()
		res, _, code := b.call(t, tool, args)
		if code != "" {
			t.Fatalf("%s: %s %.300s", tool, code, textOf(res))
		}
		return textOf(res)
	}
	call("thinking__sequentialthinking", map[string]any{"thought": "Recorded sessions must re-drive.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": false})
	decide := func(tool, verdict string, args map[string]any) events.Code {
		t.Helper()
		done := make(chan events.Code, 1)
		go func() {
			_, _, code := b.call(t, tool, args)
			done <- code
		}()
		var id string
		eventually(t, 20*time.Second, tool+" waits for approval", func() bool {
			out, _ := exec.Command(tbBin, "--data", data, "approvals", "list", "--json").Output()
			var pending []struct{ ID string }
			json.Unmarshal(out, &pending)
			if len(pending) == 1 {
				id = pending[0].ID
			}
			return id != ""
		})
		if out, err := exec.Command(tbBin, "--data", data, "approvals", verdict, id, "--reason", "test").CombinedOutput(); err != nil {
			t.Fatalf("approvals %s: %v\n%s", verdict, err, out)
		}
		select {
		case code := <-done:
			return code
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: no answer after %s", tool, verdict)
		}
		return ""
	}
	entity := map[string]any{"entities": []any{map[string]any{"name": "tracebridge", "entityType": "project", "observations": []any{"records every crossing"}}}}
	if code := decide("memory__create_entities", "approve", entity); code != "" {
		t.Fatalf("approved create_entities: %s", code)
	}
	if code := decide("memory__delete_entities", "deny", map[string]any{"entityNames": []any{"tracebridge"}}); code != events.CodeApprovalDenied {
		t.Fatalf("denied delete_entities: %q", code)
	}
	if g := call("memory__read_graph", map[string]any{}); !strings.Contains(g, "records every crossing") {
		t.Fatalf("read_graph after the approved write: %.300s", g)
	}
	call("everything__get-env", map[string]any{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "everything__simple-prompt"}); err != nil {
		t.Fatalf("prompts/get: %v", err)
	}
	if _, err := b.session.ReadResource(ctx, &sdk.ReadResourceParams{URI: "demo://resource/static/document/architecture.md"}); err != nil {
		t.Fatalf("resources/read: %v", err)
	}
	b.close(t)

	out, err := exec.Command(tbBin, "--data", data, "runs", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var run struct{ SessionID string }
	json.Unmarshal([]byte(strings.SplitN(string(out), "\n", 2)[0]), &run)
	export, err := exec.Command(tbBin, "--data", data, "session", "export", run.SessionID, "-o", "-").Output()
	if err != nil {
		t.Fatalf("session export: %v\n%s", err, export)
	}
	if strings.Contains(string(export), "PAYLOAD:sha256") || strings.Contains(string(export), "TRUNCATED") {
		t.Fatal("the session file holds references or cut values")
	}
	file := filepath.Join(dir, "stock.jsonl")
	redrive := func(f string) (string, error) {
		cmd := exec.Command(tbBin, "session", "replay", f)
		cmd.Env = append(os.Environ(), "PATH=") // no node: nothing runs
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	os.WriteFile(file, export, 0o600)
	if out, err := redrive(file); err != nil || !strings.Contains(out, "no drift") {
		t.Fatalf("re-drive of the stock servers' session: %v\n%.4000s", err, out)
	}
	// A mutated request: the recording says the bridge asked memory to
	// read another graph than the client asked for.
	mutate := func(match, old, repl string) string {
		var lines []string
		n := 0
		for _, l := range strings.Split(string(export), "\n") {
			if strings.Contains(l, match) && strings.Contains(l, old) && n == 0 {
				l, n = strings.Replace(l, old, repl, 1), 1
			}
			lines = append(lines, l)
		}
		if n == 0 {
			t.Fatalf("no line with %s and %s to mutate", match, old)
		}
		f := filepath.Join(dir, fmt.Sprintf("mutated-%d.jsonl", time.Now().UnixNano()))
		os.WriteFile(f, []byte(strings.Join(lines, "\n")), 0o600)
		return f
	}
	out2, err := redrive(mutate(`"step":"upstream"`, `Recorded sessions must re-drive.`, `Recorded sessions may drift.`))
	if err == nil || !strings.Contains(out2, "Recorded sessions may drift.") || !strings.Contains(out2, "DRIFT") {
		t.Fatalf("a mutated upstream request does not drift readably: %v\n%.3000s", err, out2)
	}
	// A mutated answer: the recording says the upstream gave another
	// prompt; the client now gets it, which is not what it got.
	out3, err := redrive(mutate(`"step":"upstream"`, `This is a simple prompt without arguments.`, `This prompt was changed.`))
	if err == nil || !strings.Contains(out3, "prompts/get everything__simple-prompt") || !strings.Contains(out3, "answer differs at result.messages[0].content.text") ||
		!strings.Contains(out3, `expected "This is a simple prompt without arguments."`) || !strings.Contains(out3, `got      "This prompt was changed."`) {
		t.Fatalf("a mutated upstream answer does not drift readably: %v\n%.3000s", err, out3)
	}
}
