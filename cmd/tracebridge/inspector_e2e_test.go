package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/internal/testenv"
)

// inspector runs the MCP Inspector's CLI (testdata/conformance pins
// 2.12.0) with args and returns its stdout.
func inspector(t *testing.T, args ...string) string {
	t.Helper()
	dir, node := conformanceDir(t)
	cmd := exec.Command(node, append([]string{filepath.Join(dir, "node_modules", ".bin", "inspector"), "--cli"}, args...)...)
	cmd.Env = append(os.Environ(), "MCP_CATALOG_PATH="+filepath.Join(t.TempDir(), "catalog.json"))
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("inspector %s: %v\n%s\n%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return string(out)
}

// The MCP Inspector's CLI lists and calls tools through tracebridge, over
// stdio and over --http, built-in and upstream alike.
func TestInspectorCLI(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1" }`})
	file := strings.TrimPrefix(cfg, "TRACEBRIDGE_CONFIG=")
	data := filepath.Join(t.TempDir(), "data")
	stdio := []string{"--", tbBin, "--data", data, "--log-level", "warn", "mcp", "--config", file}

	list := inspector(t, append([]string{"--method", "tools/list"}, stdio...)...)
	if !strings.Contains(list, `"regex_text_search"`) || !strings.Contains(list, `"f__ok"`) {
		t.Fatalf("tools/list over stdio:\n%s", list)
	}
	call := inspector(t, append([]string{"--method", "tools/call", "--tool-name", "f__ok", "--tool-arg", "text=from-inspector"}, stdio...)...)
	if !strings.Contains(call, "ok from-inspector") || !strings.Contains(call, "tracebridge/requestId") {
		t.Fatalf("tools/call over stdio:\n%s", call)
	}

	url, token, _, _ := startHTTPBridge(t, filepath.Join(t.TempDir(), "http-data"), cfg)
	http := []string{"--transport", "http", "--header", "Authorization: Bearer " + token, "--", url}
	list = inspector(t, append([]string{"--method", "tools/list"}, http...)...)
	if !strings.Contains(list, `"regex_text_search"`) || !strings.Contains(list, `"f__ok"`) {
		t.Fatalf("tools/list over HTTP:\n%s", list)
	}
	call = inspector(t, append([]string{"--method", "tools/call", "--tool-name", "regex_text_search", "--tool-arg", "query=x", "text=xyz"}, http...)...)
	if !strings.Contains(call, `"matchCount": 1`) {
		t.Fatalf("tools/call over HTTP:\n%s", call)
	}
}
