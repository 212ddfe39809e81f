package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// A hostile stdio upstream behind the gateway tries to read a private key
// in the home, a file under another client's root and /etc/shadow, to
// write outside its roots and to connect to a loopback port it was not
// given: the kernel refuses each, its answer says so, and its start
// records the confinement. The same server with sandbox = "off" succeeds
// at each (the confinement is what stops it), and the confined one's
// harmless twins — its root, its state and tmp, /etc/passwd, the port it
// was given — succeed. A confined server that dies of a refusal says which
// on upstream.exited, with the Confined hint.
func TestConfinedUpstreamIsRefusedByTheKernel(t *testing.T) {
	long(t)
	dir := t.TempDir()
	root, other, home := filepath.Join(dir, "root"), filepath.Join(dir, "other"), filepath.Join(dir, "home")
	for _, d := range []string{root, other, filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key, notes := filepath.Join(home, ".ssh", "id_rsa"), filepath.Join(other, "notes.txt")
	for _, f := range []string{key, notes, filepath.Join(root, "mine.txt")} {
		if err := os.WriteFile(f, []byte("private\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	given, notGiven := testenv.Listener(t), testenv.Listener(t)
	data := filepath.Join(dir, "data")
	// The guard's credential-path rule would refuse the key's path before
	// the server sees it: off here, so the kernel is what is tested.
	const env = "env = { TB_FAULT_UPSTREAM = \"1\" }\nguard = { credential-path = \"off\" }\n"
	cfg := hostileConfig(t, "", map[string]string{
		"jail": fmt.Sprintf(env+"roots = [%q]\nnetwork = [%q]", root, given),
		"free": env + "sandbox = \"off\"",
	})
	b := startBridge(t, tbBin, data, "2025-11-25", cfg, "HOME="+home)
	state := filepath.Join(data, "servers", "jail", "state")
	hostile := []string{"read:" + key, "read:" + notes, "read:/etc/shadow", "write:" + filepath.Join(other, "planted"),
		"write:" + filepath.Join(dir, "beside-the-root"), "connect:" + notGiven}
	twins := []string{"read:" + filepath.Join(root, "mine.txt"), "write:" + filepath.Join(root, "new.txt"), "write:" + filepath.Join(state, "kept"),
		"read:/etc/passwd", "connect:" + given}
	try := func(server, what string) string {
		res, _, code := b.call(t, server+"__try", map[string]any{"text": what})
		if code != "" {
			t.Fatalf("%s__try %s: %s %s", server, what, code, textOf(res))
		}
		return textOf(res)
	}
	for _, h := range hostile {
		if got := try("jail", h); !strings.Contains(got, "refused: ") || !strings.Contains(got, "permission denied") {
			t.Errorf("confined %s: %q, want the kernel's refusal", h, got)
		}
		if got := try("free", h); got != "ok" {
			t.Errorf("sandbox off %s: %q: the test's world does not allow it at all, so the confinement proves nothing", h, got)
		}
	}
	for _, h := range twins {
		if got := try("jail", h); got != "ok" {
			t.Errorf("confined harmless twin %s: %q", h, got)
		}
	}
	// Its start says how it was confined; the other's that it was not.
	started := map[string]events.Attrs{}
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(out), "\n") {
		var e events.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == events.KindUpstreamStarted {
			started[e.Attrs.Get("server")] = e.Attrs
		}
	}
	if a := started["jail"]; !strings.HasPrefix(a.Get("sandbox"), "landlock v") || !strings.Contains(a.Get("sandboxWrite"), root) ||
		a.Get("sandboxNetwork") != "tcp "+given[strings.LastIndex(given, ":")+1:] {
		t.Errorf("the confined server's start: %v", a)
	}
	if a := started["free"]; a.Get("sandbox") != "off" {
		t.Errorf("the unconfined server's start: %v", a)
	}
	// A server killed by a refusal: its exit names it, with the hint.
	b.call(t, "jail__try", map[string]any{"text": "crash:/etc/shadow"})
	var exited string
	eventually(t, 10*time.Second, "the crash recorded", func() bool {
		out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, `"kind":"`+events.KindUpstreamExited+`"`) && strings.Contains(l, "Confined") {
				exited = l
			}
		}
		return exited != ""
	})
	if !strings.Contains(exited, "/etc/shadow") || !strings.Contains(exited, "sandbox = \\\"off\\\"") {
		t.Errorf("the exit does not say which access was refused and what to do: %s", exited)
	}
	b.close(t)
}

// servers list shows each server's sandbox and what its last start ran
// (executable, hash, uid, confinement); servers test starts a server once
// and lists its tools and what it held open, and for one that dies under
// confinement, the refusal and what to grant. config check names the
// servers that run unconfined.
func TestServersListAndTest(t *testing.T) {
	long(t)
	dir := t.TempDir()
	needed := filepath.Join(dir, "needed.txt")
	os.WriteFile(needed, []byte("x"), 0o600)
	data := filepath.Join(dir, "data")
	const env = "env = { TB_FAULT_UPSTREAM = \"1\" }\n"
	cfg := hostileConfig(t, "", map[string]string{
		"jail":  env,
		"free":  env + "sandbox = \"off\"",
		"broke": fmt.Sprintf("env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_NEEDS = %q }\nread = []", "/etc/shadow"),
	})
	b := startBridge(t, tbBin, data, "2025-11-25", cfg)
	for _, tool := range []string{"jail__ok", "free__ok"} {
		if _, _, code := b.call(t, tool, map[string]any{}); code != "" {
			t.Fatalf("%s: %s", tool, code)
		}
	}
	b.close(t)
	cfgPath := strings.TrimPrefix(cfg, "TRACEBRIDGE_CONFIG=")
	list := tbRun(t, data, "servers", "list", "--config", cfgPath)
	self, _ := os.Executable()
	for _, want := range []string{"jail", "on, network any", "landlock v", "off", self} {
		if !strings.Contains(list, want) {
			t.Errorf("servers list lacks %q:\n%s", want, list)
		}
	}
	var rows []struct {
		Name      string `json:"name"`
		LastStart *struct {
			Sha256, Sandbox, UID string
		} `json:"lastStart"`
	}
	if err := json.Unmarshal([]byte(tbRun(t, data, "servers", "list", "--json", "--config", cfgPath)), &rows); err != nil || len(rows) != 3 {
		t.Fatalf("servers list --json: %v %+v", err, rows)
	}
	for _, r := range rows {
		if r.Name == "broke" { // never called: a call starts only its own server
			continue
		}
		if r.LastStart == nil || len(r.LastStart.Sha256) != 64 || r.LastStart.UID == "" || (r.Name == "free") != (r.LastStart.Sandbox == "off") {
			t.Errorf("servers list --json, %s: %+v", r.Name, r.LastStart)
		}
	}
	out := tbRun(t, data, "servers", "test", "jail", "--config", cfgPath)
	for _, want := range []string{"sandbox    landlock v", "answered", " ok,", "touched", self} {
		if !strings.Contains(out, want) {
			t.Errorf("servers test jail lacks %q:\n%s", want, out)
		}
	}
	cmd := exec.Command(tbBin, "--data", data, "servers", "test", "broke", "--config", cfgPath)
	bad, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(bad), "refused") || !strings.Contains(string(bad), "/etc/shadow") || !strings.Contains(string(bad), "sandbox = \"off\"") {
		t.Errorf("servers test of a server that dies confined: %v\n%s", err, bad)
	}
	check, _ := exec.Command(tbBin, "config", "check", cfgPath).CombinedOutput()
	if !strings.Contains(string(check), "servers free run with sandbox = \"off\"") {
		t.Errorf("config check does not name the unconfined server:\n%s", check)
	}
}

// Where Landlock is missing, config check names every command server as
// unconfined (the start records sandbox = "unavailable"): never silent.
func TestConfigCheckSaysWhenLandlockIsMissing(t *testing.T) {
	c, err := config.Parse("t.toml", []byte("[servers.a]\ncommand = \"x\"\n[servers.b]\ncommand = \"y\"\nsandbox = \"off\"\n[servers.c]\nurl = \"https://a.example/mcp\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(sandboxWarnings(c, 0), "\n")
	if !strings.Contains(got, "Landlock is not available") || !strings.Contains(got, "servers a would run unconfined") || !strings.Contains(got, "servers b run with sandbox = \"off\"") {
		t.Errorf("without Landlock:\n%s", got)
	}
	if got := strings.Join(sandboxWarnings(c, 7), "\n"); strings.Contains(got, "not available") {
		t.Errorf("with Landlock:\n%s", got)
	}
}

// startsOf counts the upstream.started events of each server.
func startsOf(t *testing.T, data string) map[string]int {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	n := map[string]int{}
	for _, l := range strings.Split(string(out), "\n") {
		var e events.Event
		if json.Unmarshal([]byte(l), &e) == nil && e.Kind == events.KindUpstreamStarted {
			n[e.Attrs.Get("server")]++
		}
	}
	return n
}

// F1: a session's first call, before any tools/list, starts only the
// server its tool belongs to — with the tools pinned already, and on a
// fresh data dir — not every configured server.
func TestFirstCallStartsOnlyItsServer(t *testing.T) {
	long(t)
	dir := t.TempDir()
	cfg := hostileConfig(t, "", map[string]string{"a": `env = { TB_FAULT_UPSTREAM = "1" }`, "b": `env = { TB_FAULT_UPSTREAM = "1" }`})
	fresh := filepath.Join(dir, "fresh")
	b := startBridge(t, tbBin, fresh, "2025-11-25", cfg)
	if _, _, code := b.call(t, "a__ok", map[string]any{}); code != "" {
		t.Fatalf("a first call on a fresh data dir: %s", code)
	}
	b.close(t)
	if n := startsOf(t, fresh); n["a"] != 1 || n["b"] != 0 {
		t.Fatalf("a first call on a fresh data dir started %v, want a alone", n)
	}
	pinned := filepath.Join(dir, "pinned")
	b = startBridge(t, tbBin, pinned, "2025-11-25", cfg)
	toolNames(t, b.session) // lists (and pins) both servers' tools
	b.close(t)
	b = startBridge(t, tbBin, pinned, "2025-11-25", cfg)
	if _, _, code := b.call(t, "a__ok", map[string]any{}); code != "" {
		t.Fatalf("a first call with the tools pinned: %s", code)
	}
	b.close(t)
	if n := startsOf(t, pinned); n["a"] != 2 || n["b"] != 1 {
		t.Fatalf("starts %v, want a twice and b once (only by the listing)", n)
	}
}
