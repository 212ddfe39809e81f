package main

//lint:file-ignore SA1019 editors still declare roots (deprecated in 2026-07-28, in its window); the bridge routes by them

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// startBridgeRoots is a bridge whose client declares roots (file:// URIs of
// dirs), as an editor with a workspace open does.
func startBridgeRoots(t *testing.T, data string, dirs []string, env ...string) *mcpChild {
	return startBridgeRootsIn(t, "", data, dirs, env...)
}

// startBridgeRootsIn is startBridgeRoots with the bridge's working
// directory cwd ("" for the test's).
func startBridgeRootsIn(t *testing.T, cwd, data string, dirs []string, env ...string) *mcpChild {
	t.Helper()
	b := &mcpChild{stderr: &testenv.Buffer{}, data: data}
	cmd := exec.Command(tbBin, "--data", data, "mcp")
	cmd.Dir = cwd
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	cmd.Stderr = b.stderr
	client := sdk.NewClient(&sdk.Implementation{Name: "editor", Version: "1"}, nil)
	for _, d := range dirs {
		client.AddRoots(&sdk.Root{URI: "file://" + d, Name: filepath.Base(d)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	b.session = s
	t.Cleanup(func() { s.Close() })
	return b
}

// Two projects open at once: a host per root on one data dir; each bridge
// goes to the host whose root holds its client's roots (or the one
// $TRACEBRIDGE_HOST names), operator commands to the one holding the
// working directory, list_projects across both; a bridge that cannot tell
// says which hosts run and what to set; a second host for a root is
// refused.
func TestSeveralWorkspaces(t *testing.T) {
	long(t)
	base := t.TempDir()
	data := filepath.Join(base, "data")
	ws := map[string]string{}
	for _, name := range []string{"alpha", "beta"} {
		dir := filepath.Join(base, name)
		os.MkdirAll(dir, 0o755)
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/"+name+"\n"), 0o644)
		os.WriteFile(filepath.Join(dir, name+".go"), []byte("package "+name+"\n"), 0o644)
		ws[name], _ = filepath.EvalSymlinks(dir)
	}
	start(t, tbBin, data, "up", "--root", ws["alpha"], "--ui", "off")
	start(t, tbBin, data, "host", "--root", ws["beta"])
	eventually(t, 15*time.Second, "two hosts listed", func() bool { return len(host.Registry(hub.DataDir(data).Hosts()).Live()) == 2 })

	focus := func(dir, spec string) {
		cmd := exec.Command(tbBin, "--data", data, "focus", spec)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("focus %s in %s: %v\n%s", spec, dir, err, out)
		}
	}
	focus(ws["alpha"], "alpha.go:1:1-1:8")
	focus(ws["beta"], "beta.go:1:1-1:8")

	for _, name := range []string{"alpha", "beta"} {
		b := startBridgeRoots(t, data, []string{ws[name]})
		res, _, code := b.call(t, "get_active_document", map[string]any{})
		if code != "" || !strings.Contains(textOf(res), name+".go") {
			t.Fatalf("a client with root %s: %s %s", name, code, textOf(res))
		}
		res, _, code = b.call(t, "list_projects", map[string]any{})
		if code != "" || !strings.Contains(textOf(res), ws["alpha"]) || !strings.Contains(textOf(res), ws["beta"]) {
			t.Fatalf("list_projects across both hosts: %s %s", code, textOf(res))
		}
		b.close(t)
		// The session re-drives offline: the client's roots choose the
		// same recorded host, list_projects asks both again.
		file := filepath.Join(base, name+".jsonl")
		(&recording{data: data}).exportLast(t, "list_projects", file, "two-hosts-"+name)
		if out, err := exec.Command(tbBin, "session", "replay", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "no drift") {
			b, _ := os.ReadFile(file)
			t.Fatalf("a session over two workspace hosts does not re-drive cleanly: %v\n%s\nfile:\n%.6000s", err, out, b)
		}
	}
	lost := startBridgeRoots(t, data, nil)
	res, _, code := lost.call(t, "get_active_document", map[string]any{})
	if code != events.CodePipeUnavailable || !strings.Contains(textOf(res), "TRACEBRIDGE_HOST") || !strings.Contains(textOf(res), ws["beta"]) {
		t.Fatalf("a bridge that cannot tell the hosts apart: %s %s", code, textOf(res))
	}
	lost.close(t)
	var betaSock string
	for _, h := range host.Registry(hub.DataDir(data).Hosts()).Live() {
		if h.Root == ws["beta"] {
			betaSock = h.Socket
		}
	}
	pinned := startBridgeRoots(t, data, nil, "TRACEBRIDGE_HOST="+betaSock)
	if res, _, code := pinned.call(t, "get_active_document", map[string]any{}); code != "" || !strings.Contains(textOf(res), "beta.go") {
		t.Fatalf("TRACEBRIDGE_HOST: %s %s", code, textOf(res))
	}
	pinned.close(t)
	out, err := exec.Command(tbBin, "--data", data, "host", "--root", ws["alpha"]).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "runs already") {
		t.Fatalf("a second host for one root: %v\n%s", err, out)
	}
}

// W4: hosts started with a relative --data register absolute sockets, so
// a bridge in any directory finds them; W3: a client's declared roots
// choose its host even when the bridge runs in another host's (deeper)
// root, and roots held by two hosts are refused as Ambiguous.
func TestHostsRouteByRootsFromAnyDirectory(t *testing.T) {
	long(t)
	base, _ := filepath.EvalSymlinks(t.TempDir())
	a, b := filepath.Join(base, "a"), filepath.Join(base, "bbbbbbbbbbbbbbbb")
	for _, d := range []string{a, b, filepath.Join(base, "sub")} {
		os.MkdirAll(d, 0o755)
	}
	os.WriteFile(filepath.Join(a, "x.txt"), []byte("file in a\n"), 0o644)
	os.WriteFile(filepath.Join(b, "x.txt"), []byte("file in b\n"), 0o644)
	for _, root := range []string{a, b} {
		cmd := exec.Command(tbBin, "--data", "data", "host", "--root", root) // relative --data
		cmd.Dir = base
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	}
	data := filepath.Join(base, "data")
	eventually(t, 15*time.Second, "two hosts listed", func() bool { return len(host.Registry(hub.DataDir(data).Hosts()).Live()) == 2 })
	for _, h := range host.Registry(hub.DataDir(data).Hosts()).Live() {
		if !filepath.IsAbs(h.Socket) {
			t.Fatalf("a host registered the relative socket %s", h.Socket)
		}
	}
	for _, root := range []string{a, b} {
		focus := exec.Command(tbBin, "--data", "../data", "focus", "x.txt:1")
		focus.Dir = root
		if out, err := focus.CombinedOutput(); err != nil {
			t.Fatalf("focus in %s: %v\n%s", root, err, out)
		}
	}
	br := startBridgeRootsIn(t, b, data, []string{a})
	if res, _, code := br.call(t, "get_active_document", map[string]any{}); code != "" || !strings.Contains(textOf(res), "file in a") {
		t.Fatalf("roots = [a], cwd = b: %s %s", code, textOf(res))
	}
	br.close(t)
	br = startBridgeRootsIn(t, filepath.Join(base, "sub"), data, []string{a, b})
	if res, _, code := br.call(t, "get_active_document", map[string]any{}); code != events.CodeAmbiguous {
		t.Fatalf("roots on two hosts: %s %s", code, textOf(res))
	}
	br.close(t)
}
