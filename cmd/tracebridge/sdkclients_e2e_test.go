package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// tsCall is what testdata/clients/calls.mjs says of one call.
type tsCall struct {
	Name    string      `json:"name"`
	Listed  bool        `json:"listed"`
	IsError bool        `json:"isError"`
	Text    string      `json:"text"`
	Code    events.Code `json:"code"`
	Threw   string      `json:"threw"`
}

// tsCalls runs the official TypeScript SDK client flavor ("v1", "v2"),
// or with "python" the official Python SDK client (1.28), against target
// (stdio: command, args, env; HTTP: url, token) with calls.
func tsCalls(t *testing.T, flavor string, target map[string]any, calls []map[string]any) []tsCall {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("testdata", "clients"))
	if err != nil {
		t.Fatal(err)
	}
	tj, _ := json.Marshal(target)
	cj, _ := json.Marshal(calls)
	var cmd *exec.Cmd
	if flavor == "python" {
		cmd = pythonClient(t, filepath.Join(dir, "python"), string(tj), string(cj))
	} else {
		if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
			t.Fatalf("the TypeScript SDK clients are not installed (%v): run `bash .ci/deps` (make test does)", err)
		}
		cmd = exec.Command("node", filepath.Join(dir, "calls.mjs"), flavor, string(tj), string(cj))
		cmd.Dir = dir
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the %s client: %v\n%s\n%s", flavor, err, out, stderr.String())
	}
	var got []tsCall
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var c tsCall
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatalf("%s: %q", err, sc.Text())
		}
		got = append(got, c)
	}
	if len(got) != len(calls) {
		t.Fatalf("the %s client answered %d of %d calls:\n%s\n%s", flavor, len(got), len(calls), out, stderr.String())
	}
	return got
}

// pythonClient is testdata/clients/python/calls.py on the interpreter and
// packages .ci/deps installed (site/PYTHON, site/root).
func pythonClient(t *testing.T, dir string, args ...string) *exec.Cmd {
	t.Helper()
	interp, err := os.ReadFile(filepath.Join(dir, "site", "PYTHON"))
	if err != nil {
		t.Fatalf("the MCP Python SDK client is not installed (%v): run `bash .ci/deps` (make test does)", err)
	}
	cmd := exec.Command(strings.TrimSpace(string(interp)), append([]string{filepath.Join(dir, "calls.py")}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+filepath.Join(dir, "site", "root", "usr", "lib", "python3", "dist-packages"), "PYTHONDONTWRITEBYTECODE=1")
	return cmd
}

// The official TypeScript SDK clients, v1 (1.32) and v2 (2.4), and the
// official Python SDK client (1.28) read the
// gateway's errors for upstream tools that declare an outputSchema as
// coded error results — over stdio and HTTP — the same as they read the
// upstream's own error directly (the v1 client threw -32602 on the
// structured error content the bridge added): a denial (PolicyDenied), an
// upstream error (UpstreamError, the server's own error through the
// gateway) and a changed descriptor (ToolChanged).
func TestOfficialClientsReadCodedErrors(t *testing.T) {
	long(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	os.MkdirAll(root, 0o700)
	fsjs := npmServer(t, "server-filesystem")
	self, _ := os.Executable()
	descFile := filepath.Join(dir, "desc")
	os.WriteFile(descFile, []byte("answers with structured content"), 0o600)
	cfg := writeConfig(t, fmt.Sprintf(`[policy]
deny = ["fs__write_file"]
[servers.fs]
command = "node"
args = [%q, %q]
[servers.s]
command = %q
env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_STRUCT_DESC = %q }
`, fsjs, root, self, descFile))
	calls := []map[string]any{
		{"name": "fs__write_file", "arguments": map[string]any{"path": filepath.Join(root, "x.txt"), "content": "x"}},
		{"name": "fs__read_text_file", "arguments": map[string]any{"path": filepath.Join(root, "missing.txt")}},
		{"name": "s__structured", "arguments": map[string]any{"text": "fail"}},
		{"name": "s__structured", "arguments": map[string]any{"text": "fine"}},
	}
	want := []events.Code{events.CodePolicyDenied, events.CodeUpstreamError, events.CodeUpstreamError, ""}
	check := func(how string, got []tsCall, want []events.Code) {
		t.Helper()
		for i, c := range got {
			switch {
			case c.Threw != "":
				t.Errorf("%s: %s threw %q", how, c.Name, c.Threw)
			case !c.Listed:
				t.Errorf("%s: %s is not listed", how, c.Name)
			case c.IsError != (want[i] != "") || c.Code != want[i]:
				t.Errorf("%s: %s isError %v code %q, want %q: %s", how, c.Name, c.IsError, c.Code, want[i], c.Text)
			}
		}
	}
	// Directly: the filesystem server's own error is an error result.
	for _, flavor := range []string{"v1", "v2", "python"} {
		got := tsCalls(t, flavor, map[string]any{"command": "node", "args": []string{fsjs, root}},
			[]map[string]any{{"name": "read_text_file", "arguments": map[string]any{"path": filepath.Join(root, "missing.txt")}}})
		if got[0].Threw != "" || !got[0].IsError || !strings.Contains(got[0].Text, "ENOENT") {
			t.Fatalf("directly, %s: %+v", flavor, got[0])
		}
	}
	data := filepath.Join(dir, "data")
	stdio := map[string]any{"command": tbBin, "args": []string{"--data", data, "mcp"}, "env": map[string]string{"TRACEBRIDGE_CONFIG": strings.TrimPrefix(cfg, "TRACEBRIDGE_CONFIG=")}}
	for _, flavor := range []string{"v1", "v2", "python"} {
		check(flavor+" over stdio", tsCalls(t, flavor, stdio, calls), want)
	}
	httpData := filepath.Join(dir, "http-data")
	url, token, _, _ := startHTTPBridge(t, httpData, cfg)
	for _, flavor := range []string{"v1", "v2", "python"} {
		check(flavor+" over HTTP", tsCalls(t, flavor, map[string]any{"url": url, "token": token}, calls), want)
	}
	// The structured tool's descriptor changes: each client reads
	// ToolChanged as a coded error of a tool it knows the output schema of.
	os.WriteFile(descFile, []byte("answers with structured content, changed"), 0o600)
	changed := []map[string]any{{"name": "s__structured", "arguments": map[string]any{"text": "after"}}}
	for _, flavor := range []string{"v1", "v2", "python"} {
		check(flavor+" over stdio, changed", tsCalls(t, flavor, stdio, changed), []events.Code{events.CodeToolChanged})
	}
}

// Seed 82: present_review's schema, as clients list it, is strict (mode
// an enum, content required), and a wrong mode still goes to the host for
// Dialectic's own message, not a schema checker's.
func TestPresentReviewSchemaIsStrictAndItsMessageKept(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-11-25")
	defer b.close(t)
	res, err := b.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	for _, tool := range res.Tools {
		if tool.Name == "present_review" {
			raw, _ := json.Marshal(tool.InputSchema)
			json.Unmarshal(raw, &schema)
		}
	}
	if !slices.Contains(schema.Required, "content") || !slices.Equal(schema.Properties["mode"].Enum, []string{"replace", "append", "update-section"}) {
		t.Fatalf("present_review's listed schema is not strict: %+v", schema)
	}
	// No host runs here: a wrong mode passes the executor's check and
	// reaches the host step (whose message bridge/mcp's golden
	// present-review-bad-mode shows), rather than a schema checker's.
	if r, _, code := b.call(t, "present_review", map[string]any{"content": "x", "mode": "sideways"}); code != events.CodePipeUnavailable {
		t.Fatalf("a wrong mode was refused before the host: %s %s", code, textOf(r))
	}
}
