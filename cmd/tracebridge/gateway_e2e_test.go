package main

import (
	"bytes"
	"context"
	"fmt"
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
)

// npmServer is the path of a third-party MCP server's entry point, installed
// from the npm registry at the versions testdata/upstreams/package-lock.json
// pins (make test installs them: .ci/deps).
func npmServer(t *testing.T, pkg string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "upstreams", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s is not installed (%v): run `bash .ci/deps` (make test does)", pkg, err)
	}
	return p
}

func toolNames(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	var out []string
	for tool, err := range s.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tool.Name)
	}
	return out
}

// A real client, through the real binary, lists built-in and upstream
// tools and calls tools of two third-party servers; every call's chain has
// the upstream hop; progress arrives; policy and approval denials never
// reach the upstream (its file is unchanged); a secret given to the
// upstream's env and echoed back never reaches the log, the logs or stderr.
func TestGatewayThirdPartyServers(t *testing.T) {
	long(t)
	everything, filesystem := npmServer(t, "server-everything"), npmServer(t, "server-filesystem")
	for _, proto := range []string{"2025-06-18", ""} {
		t.Run("proto="+proto, func(t *testing.T) {
			root := t.TempDir()
			victim := filepath.Join(root, "keep.txt")
			os.WriteFile(victim, []byte("original\n"), 0o600)
			canary := fmt.Sprintf("tb-canary-%d-gw", time.Now().UnixNano())
			cfg := writeConfig(t, fmt.Sprintf(`
[approval]
mode = "deny"

[policy]
deny = ["fs__move_file"]

[secrets.CANARY]
env = "TB_GW_CANARY"

[servers.everything]
command = "node"
args = [%q, "stdio"]
env = { TB_UPSTREAM_TOKEN = "${secret:CANARY}" }

[servers.fs]
command = "node"
args = [%q, %q]
`, everything, filesystem, root))
			data := filepath.Join(t.TempDir(), "data")
			var progress atomic.Int32
			b := startBridgeWith(t, tbBin, data, proto, &sdk.ClientOptions{
				ProgressNotificationHandler: func(context.Context, *sdk.ProgressNotificationClientRequest) { progress.Add(1) },
			}, cfg, "TB_GW_CANARY="+canary)
			names := toolNames(t, b.session)
			for _, want := range []string{"regex_text_search", "everything__echo", "everything__get-env", "fs__write_file", "fs__read_text_file"} {
				if !slices.Contains(names, want) {
					t.Fatalf("tools/list lacks %s: %v\nstderr:\n%s", want, names, b.stderr)
				}
			}

			res, req, code := b.call(t, "everything__echo", map[string]any{"message": "hello upstream"})
			if code != "" || !strings.Contains(textOf(res), "hello upstream") {
				t.Fatalf("echo: %s %q", code, textOf(res))
			}
			res, _, code = b.call(t, "fs__read_text_file", map[string]any{"path": victim})
			if code != "" || !strings.Contains(textOf(res), "original") {
				t.Fatalf("read_text_file: %s %q", code, textOf(res))
			}
			// get-env echoes the upstream's environment, canary included:
			// the client gets it (it is the tool's answer), the evidence never.
			res, _, code = b.call(t, "everything__get-env", map[string]any{})
			if code != "" || !strings.Contains(textOf(res), canary) {
				t.Fatalf("get-env: %s (canary echoed: %v)", code, strings.Contains(textOf(res), canary))
			}
			// A side-effecting tool (no readOnlyHint) goes through approval
			// ([approval] mode = deny), and policy.deny stops another: the
			// upstream never sees either.
			_, _, code = b.call(t, "fs__write_file", map[string]any{"path": victim, "content": "overwritten"})
			if code != events.CodeApprovalDenied {
				t.Fatalf("write_file: code %q, want ApprovalDenied", code)
			}
			_, _, code = b.call(t, "fs__move_file", map[string]any{"source": victim, "destination": victim + ".moved"})
			if code != events.CodePolicyDenied {
				t.Fatalf("move_file: code %q, want PolicyDenied", code)
			}
			if got, _ := os.ReadFile(victim); string(got) != "original\n" {
				t.Fatalf("a denied call reached the filesystem server: %q", got)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			params := &sdk.CallToolParams{Name: "everything__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 3}}
			params.SetProgressToken("p1")
			if _, err := b.session.CallTool(ctx, params); err != nil {
				t.Fatal(err)
			}
			cancel()
			if progress.Load() == 0 {
				t.Fatal("no progress notification of the upstream reached the client")
			}
			b.close(t)

			evs := requestEvents(t, data, req)
			want := []string{"mcp.request.received", "executor.started", "executor.catalog.resolved", "policy.decided",
				"tool.started", "upstream.request.sent", "upstream.response.received", "tool.completed", "executor.audit", "mcp.response.sent"}
			if got := kindsOf(evs); !slices.Equal(got, want) {
				t.Fatalf("echo's events:\n got %v\nwant %v", got, want)
			}
			if e := evs[5]; e.Attrs["server"] != "everything" || e.Attrs["rpcId"] == "" || e.Attrs["method"] != "tools/call" {
				t.Fatalf("upstream.request.sent attrs %v", e.Attrs)
			}
			out, err := exec.Command(tbBin, "--data", data, "replay", req.String()).CombinedOutput()
			if err != nil || !strings.Contains(string(out), "upstream") {
				t.Fatalf("replay: %v\n%s", err, out)
			}
			leaks := canaryHits(t, data, canary)
			if strings.Contains(b.stderr.String(), canary) {
				leaks = append(leaks, "bridge stderr")
			}
			if strings.Contains(string(out), canary) {
				leaks = append(leaks, "replay output")
			}
			if len(leaks) > 0 {
				t.Fatalf("the canary leaked into %v", leaks)
			}
		})
	}
}

// canaryHits lists the files under dir whose bytes contain canary.
func canaryHits(t *testing.T, dir, canary string) []string {
	t.Helper()
	var hits []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(canary)) {
			hits = append(hits, p)
		}
		return nil
	})
	return hits
}

// startBridgeWith is startBridge with client options (notification
// handlers).
func startBridgeWith(t *testing.T, bin, data, proto string, copts *sdk.ClientOptions, env ...string) *bridge {
	t.Helper()
	b := &bridge{stderr: &lockedBuffer{}, data: data}
	cmd := exec.Command(bin, "--data", data, "mcp")
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	cmd.Stderr = b.stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1.0"}, copts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts *sdk.ClientSessionOptions
	if proto != "" {
		opts = &sdk.ClientSessionOptions{ProtocolVersion: proto}
	}
	s, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, opts)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, b.stderr)
	}
	b.session = s
	t.Cleanup(func() { s.Close() })
	return b
}
