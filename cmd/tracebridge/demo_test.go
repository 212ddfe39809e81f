package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// `demo --data DIR` writes only inside DIR, which it creates: a user's
// workspace beside DIR is untouched, and a DIR that holds anything (an
// existing log, a user's files) is refused before anything is written.
func TestDemoWritesOnlyWhereItSays(t *testing.T) {
	base := t.TempDir()
	user := filepath.Join(base, "workspace", "svc", "price.go")
	os.MkdirAll(filepath.Dir(user), 0o755)
	mine := "package svc\n\n// the user's own file\nfunc Price() int { return 7 }\n"
	os.WriteFile(user, []byte(mine), 0o644)
	data := filepath.Join(base, "data")
	out, err := exec.Command(tbBin, "--data", data, "demo", "--artifacts", filepath.Join(base, "data", "triads")).CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "writes only under "+data) {
		t.Errorf("the demo does not say where it writes:\n%.600s", out)
	}
	if got, _ := os.ReadFile(user); string(got) != mine {
		t.Errorf("the demo changed the user's file beside its data dir:\n%s", got)
	}
	if _, err := os.Stat(filepath.Join(base, "workspace", "go.mod")); err == nil {
		t.Error("the demo wrote go.mod into the user's workspace")
	}
	entries, _ := os.ReadDir(base)
	if len(entries) != 2 {
		t.Errorf("the demo wrote beside its data dir: %v", entries)
	}
	// Again on the same, now non-empty, data dir: refused, nothing appended.
	before, _ := os.ReadFile(filepath.Join(data, "events.db"))
	out, err = exec.Command(tbBin, "--data", data, "demo").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "not empty") {
		t.Fatalf("demo on a used data dir: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(filepath.Join(data, "events.db")); len(after) != len(before) {
		t.Error("the refused demo still touched the log")
	}
}

// Requests piped into the real binary with stdin closed right after are
// all answered before it exits 0.
func TestMCPAnswersEverythingPipedBeforeEOF(t *testing.T) {
	cmd := exec.Command(tbBin, "--data", filepath.Join(t.TempDir(), "data"), "mcp")
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"pipe","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("mcp: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"id":1,`) || !strings.Contains(lines[1], `"id":2,`) || !strings.Contains(lines[1], "regex_text_search") {
		t.Fatalf("stdout after stdin closed:\n%s", out)
	}
}

// The README's example configuration works as shown: config check accepts
// it, and the default tools run with it (none needs an unset secret).
func TestREADMEConfigWorksAsShown(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```toml\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("no ```toml block in README.md")
	}
	cfg := filepath.Join(t.TempDir(), "tracebridge.toml")
	os.WriteFile(cfg, []byte(block), 0o600)
	cmd := exec.Command(tbBin, "config", "check", cfg)
	cmd.Env = append(os.Environ(), "GITHUB_TOKEN=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("config check of the README's example: %v\n%s", err, out)
	}
	b := startBridge(t, tbBin, filepath.Join(t.TempDir(), "data"), "2025-06-18", "TRACEBRIDGE_CONFIG="+cfg, "GITHUB_TOKEN=")
	if res, _, code := b.call(t, "regex_text_search", map[string]any{"pattern": "x", "text": "x"}); code != "" {
		t.Fatalf("regex_text_search with the README's config: %s %s", code, textOf(res))
	}
	b.close(t)
}

// A configuration fixed while the bridge runs is put in force without a
// restart, and recorded; while broken, the message names the file and the
// command that checks it.
func TestFixedConfigNeedsNoRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tracebridge.toml")
	os.WriteFile(cfg, []byte("[approval]\nmode = \"maybe\"\n"), 0o600)
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-06-18", "TRACEBRIDGE_CONFIG="+cfg)
	res, _, code := b.call(t, "regex_text_search", map[string]any{"pattern": "x", "text": "x"})
	if code != events.CodeConfigInvalid || !strings.Contains(textOf(res), "tracebridge config check --config "+cfg) {
		t.Fatalf("broken config: %s %s", code, textOf(res))
	}
	os.WriteFile(cfg, []byte("[approval]\nmode = \"deny\"\n"), 0o600)
	eventually(t, 15*time.Second, "the fixed config in force", func() bool {
		_, _, code := b.call(t, "regex_text_search", map[string]any{"pattern": "x", "text": "x"})
		return code == ""
	})
	b.close(t)
	out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "10000").Output()
	if !strings.Contains(string(out), "policy.config.loaded") {
		t.Error("the reload was not recorded")
	}
}

// The bash completion script completes commands and subcommands in a real
// bash.
func TestBashCompletion(t *testing.T) {
	script, err := exec.Command(tbBin, "completion", "bash").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "c.bash")
	os.WriteFile(f, script, 0o644)
	out, err := exec.Command("bash", "-c", `source "$1"; COMP_WORDS=(tracebridge prop); COMP_CWORD=1; _tracebridge; echo "${COMPREPLY[@]}"; COMP_WORDS=(tracebridge --data d session e); COMP_CWORD=4; _tracebridge; echo "${COMPREPLY[@]}"`, "bash", f).Output()
	if err != nil || string(out) != "proposals\nexport\n" {
		t.Fatalf("completion: %v %q", err, out)
	}
}

// prune removes old log files of bridges that are gone and the demo's old
// temp dirs; never a live bridge's log, anything recent, or the event log.
func TestPruneRemovesOnlyWhatIsOldAndUnused(t *testing.T) {
	base := t.TempDir()
	data, tmp := filepath.Join(base, "data"), filepath.Join(base, "tmp")
	os.MkdirAll(filepath.Join(data, "logs"), 0o700)
	os.MkdirAll(tmp, 0o700)
	old := time.Now().Add(-30 * 24 * time.Hour)
	mk := func(p string, dir bool, when time.Time) string {
		if dir {
			os.MkdirAll(p, 0o700)
		} else {
			os.WriteFile(p, []byte("x"), 0o600)
		}
		os.Chtimes(p, when, when)
		return p
	}
	gone := mk(filepath.Join(data, "logs", "mcp-999999.log"), false, old)
	live := mk(filepath.Join(data, "logs", fmt.Sprintf("mcp-%d.log", os.Getpid())), false, old)
	recent := mk(filepath.Join(data, "logs", "mcp-999998.log"), false, time.Now())
	oldDemo := mk(filepath.Join(tmp, "tracebridge-demo-123"), true, old)
	newDemo := mk(filepath.Join(tmp, "tracebridge-demo-456"), true, time.Now())
	events := mk(filepath.Join(data, "events.db"), false, old)
	// The age in days, as README writes it (one duration syntax with the
	// configuration's "90d"; "7d" was a parse error).
	cmd := exec.Command(tbBin, "--data", data, "prune", "--older", "7d")
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	for p, want := range map[string]bool{gone: false, oldDemo: false, live: true, recent: true, newDemo: true, events: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v\n%s", p, err == nil, want, out)
		}
	}
}
