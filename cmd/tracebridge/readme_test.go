package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// readmeCommands are the `tracebridge …` lines of the README's shell
// blocks, comments removed.
func readmeCommands(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, block := range strings.Split(string(b), "```sh\n")[1:] {
		body, _, _ := strings.Cut(block, "```")
		for _, line := range strings.Split(body, "\n") {
			line, _, _ = strings.Cut(line, " #")
			if line = strings.TrimSpace(line); strings.HasPrefix(line, "tracebridge ") {
				out = append(out, line)
			}
		}
	}
	return out
}

var flagRE = regexp.MustCompile(`(?:^|[\s\[|])(--?[a-z][a-z-]*)`)

// TestREADMECommands turns every command line of the README into a script
// (testscript) that asks the real binary for that command's usage and
// checks that the subcommand and every flag the line shows exist: the
// README cannot name a command, subcommand or flag the code lacks.
func TestREADMECommands(t *testing.T) {
	lines := readmeCommands(t)
	if len(lines) < 30 {
		t.Fatalf("found %d command lines in README.md; the parser lost them", len(lines))
	}
	var script strings.Builder
	for _, line := range lines {
		fields := strings.Fields(strings.TrimPrefix(line, "tracebridge "))
		cmd := fields[0]
		if strings.HasPrefix(cmd, "-") { // tracebridge --version
			fmt.Fprintf(&script, "# %s\nexec tracebridge %s\n\n", line, cmd)
			continue
		}
		fmt.Fprintf(&script, "# %s\nexec tracebridge %s --help\n", line, cmd)
		if subs := commands()[cmd].subs; len(subs) > 0 && len(fields) > 1 && !strings.HasPrefix(fields[1], "-") {
			if !slices.Contains(subs, fields[1]) {
				t.Errorf("README: %q: %s has no subcommand %q (it has %v)", line, cmd, fields[1], subs)
			}
			fmt.Fprintf(&script, "stdout %s\n", regexp.QuoteMeta(fields[1]))
		}
		for _, m := range flagRE.FindAllStringSubmatch(strings.Join(fields[1:], " "), -1) {
			flag := strings.TrimLeft(m[1], "-")
			if flag == "" {
				continue
			}
			fmt.Fprintf(&script, "stdout '-%s\\b'\n", regexp.QuoteMeta(flag))
		}
		script.WriteString("\n")
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "readme.txtar"), []byte(script.String()), 0o644)
	testscript.Run(t, testscript.Params{
		Dir: dir,
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(tbBin)+string(filepath.ListSeparator)+env.Getenv("PATH"))
			env.Setenv("TRACEBRIDGE_DATA", filepath.Join(env.WorkDir, "data"))
			return nil
		},
	})
}

// F4: the README's policy rules for the filesystem server name the fields
// its tools take: config check, which checks a rule's args.* against the
// input schemas the log has pinned, accepts them once server-filesystem's
// tools are pinned, and refuses the README's old rule (args.path for
// move_file, which takes source and destination).
func TestReadmePolicyRulesFitTheFilesystemServer(t *testing.T) {
	long(t)
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, _ := strings.Cut(string(b), "[policy.rules.writes-under-docs]")
	block, _, _ = strings.Cut(block, "[policy.rules.issues-in-our-org]")
	rules := "[policy.rules.writes-under-docs]" + block
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	fs := fmt.Sprintf("[servers.fs]\ncommand = \"node\"\nargs = [%q, %q]\n", npmServer(t, "server-filesystem"), dir)
	bridge := startBridge(t, tbBin, data, "2025-11-25", writeConfig(t, fs))
	toolNames(t, bridge.session)
	bridge.close(t)
	check := func(body string) (string, error) {
		path := filepath.Join(dir, "check.toml")
		os.WriteFile(path, []byte(fs+body), 0o600)
		out, err := exec.Command(tbBin, "--data", data, "config", "check", path).CombinedOutput()
		return string(out), err
	}
	if out, err := check(rules); err != nil {
		t.Fatalf("the README's rules do not fit server-filesystem's tools: %v\n%s", err, out)
	}
	old := "[policy.rules.w]\ntools = [\"fs__move_file\"]\nwhen = 'args.path.startsWith(\"/srv\")'\neffect = \"deny\"\n"
	if out, err := check(old); err == nil || !strings.Contains(out, "path") {
		t.Fatalf("config check accepts args.path for move_file: %v\n%s", err, out)
	}
}
