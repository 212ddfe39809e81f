package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// Each client's format imports into [servers.*] sections that config
// check accepts, with secrets moved into the client entry's env (never
// into tracebridge.toml), and a client entry in the client's own format.
func TestServersImportEveryClientFormat(t *testing.T) {
	cases := map[string]struct {
		servers []string
		secret  string // a value that must not reach the TOML
		entry   string // the replacing entry's top-level key
		args    []string
		note    string // in the notes
	}{
		"claude_desktop_config.json": {[]string{"filesystem", "github"}, "ghp_exampleexampleexampleexample0000", "mcpServers", nil, ""},
		"cursor_mcp.json":            {[]string{"filesystem", "github"}, "ghp_exampleexampleexampleexample0000", "mcpServers", nil, ""},
		"vscode_mcp.json":            {[]string{"memory", "remote-docs"}, "", "servers", nil, ""},
		// Claude Code's user scope, and the project whose own servers
		// are not imported is named.
		"claude_code.json": {[]string{"sentry"}, "sntrys_secretsecretsecret", "mcpServers", nil, "project /home/me/app has servers of its own (postgres), not imported: add them with --project /home/me/app"},
		// With that project, its servers too.
		"claude_code.json --project": {[]string{"postgres", "sentry"}, "sntrys_secretsecretsecret", "mcpServers", []string{"--project", "/home/me/app"}, ""},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			file, _, _ := strings.Cut(name, " ")
			args := append([]string{"servers", "import", filepath.Join("..", "..", "config", "testdata", "clients", file)}, tc.args...)
			out, err := exec.Command(tbBin, args...).CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			toml, entry, ok := strings.Cut(string(out), "# The client entry that replaces them")
			if !ok {
				t.Fatalf("no client entry:\n%s", out)
			}
			if !strings.Contains(toml, tc.note) || !strings.Contains(toml, "`tracebridge tools list` names them") {
				t.Errorf("the notes lack %q:\n%s", tc.note, toml)
			}
			c, err := config.Parse(file, []byte(toml))
			if err != nil {
				t.Fatalf("the imported sections do not parse: %v\n%s", err, toml)
			}
			for _, s := range tc.servers {
				if _, ok := c.Servers[s]; !ok {
					t.Fatalf("server %s missing: %v", s, c.Servers)
				}
			}
			if tc.secret != "" && strings.Contains(toml, tc.secret) {
				t.Fatal("a secret value was written to tracebridge.toml")
			}
			line := entry[strings.Index(entry, "{"):]
			var doc map[string]map[string]struct {
				Command string            `json:"command"`
				Args    []string          `json:"args"`
				Env     map[string]string `json:"env"`
			}
			json.Unmarshal([]byte(strings.TrimSpace(line)), &doc)
			e := doc[tc.entry]["tracebridge"]
			if len(e.Args) != 1 || e.Args[0] != "mcp" {
				t.Fatalf("client entry %s", line)
			}
			if tc.secret != "" && !strings.Contains(fmt.Sprint(e.Env), tc.secret) {
				t.Fatalf("the secret is not passed in the client entry's env: %v", e.Env)
			}
		})
	}
}

// The user's story: a Claude Desktop config with a real server, imported
// with --write, and the client entry it prints launching tracebridge: the
// server's tools are served through it, recorded, and a second import
// refuses to add the same server twice.
func TestServersImportThenUse(t *testing.T) {
	long(t)
	everything := npmServer(t, "server-everything")
	dir := t.TempDir()
	desktop := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(desktop, fmt.Appendf(nil, `{"mcpServers": {"everything": {"command": "node", "args": [%q, "stdio"], "env": {"EVERYTHING_TOKEN": "desktop-secret-value-123456"}}}}`, everything), 0o600)
	cfgPath := filepath.Join(dir, "config", "tracebridge.toml")
	out, err := exec.Command(tbBin, "servers", "import", desktop, "--write", "--config", cfgPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote 1 server to") {
		t.Fatalf("import --write: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfgPath); strings.Contains(string(b), "desktop-secret-value") || !strings.Contains(string(b), "[servers.everything]") {
		t.Fatalf("written config:\n%s", b)
	}
	if out, err := exec.Command(tbBin, "config", "check", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	// Importing again adds what is new and names what it left as it was.
	before, _ := os.ReadFile(cfgPath)
	if out, err = exec.Command(tbBin, "servers", "import", desktop, "--write", "--config", cfgPath).CombinedOutput(); err != nil ||
		!strings.Contains(string(out), "has already: everything") || !strings.Contains(string(out), "nothing new to write") {
		t.Fatalf("a second import: %v\n%s", err, out)
	}
	if after, _ := os.ReadFile(cfgPath); string(after) != string(before) {
		t.Fatalf("a second import changed the config:\n%s", after)
	}
	line := string(out[strings.LastIndex(string(out), "{\"mcpServers\""):])
	var doc struct {
		MCPServers map[string]struct {
			Args []string          `json:"args"`
			Env  map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &doc); err != nil {
		t.Fatalf("client entry %q: %v", line, err)
	}
	// The client launches what the entry says — its args (which name the
	// config --write wrote: without them the bridge had only its built-in
	// tools) and its env; the test's binary stands in for the path.
	entry := doc.MCPServers["tracebridge"]
	if !slices.Equal(entry.Args, []string{"mcp", "--config", cfgPath}) {
		t.Fatalf("the client entry's args %q do not name the config written (%s)", entry.Args, cfgPath)
	}
	var env []string
	for k, v := range entry.Env {
		env = append(env, k+"="+v)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(tbBin, append([]string{"--data", data}, entry.Args...)...)
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	b := &mcpChild{stderr: &testenv.Buffer{}, data: data}
	cmd.Stderr = b.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "desktop", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, b.stderr)
	}
	b.session = s
	res, req, code := b.call(t, "everything__echo", map[string]any{"message": "imported"})
	if code != "" || !strings.Contains(textOf(res), "imported") {
		t.Fatalf("echo through the imported server: %s %q", code, textOf(res))
	}
	b.close(t)
	if evs := requestEvents(t, data, req); !hasKind(evs, "upstream.response.received", "") {
		t.Fatalf("no upstream hop recorded: %v", kindsOf(evs))
	}
	if hits := canaryHits(t, data, "desktop-secret-value-123456"); len(hits) > 0 {
		t.Fatalf("the imported secret leaked into %v", hits)
	}
}

// I5: --write through a symlinked tracebridge.toml writes the file it
// points to, and the link stays a link.
func TestServersImportWritesThroughASymlink(t *testing.T) {
	dir := t.TempDir()
	real, link := filepath.Join(dir, "real", "tb.toml"), filepath.Join(dir, "cfg", "tb.toml")
	os.MkdirAll(filepath.Dir(real), 0o700)
	os.MkdirAll(filepath.Dir(link), 0o700)
	os.WriteFile(real, []byte("[policy]\ngrant = [\"text.search\"]\n"), 0o600)
	if err := os.Symlink("../real/tb.toml", link); err != nil {
		t.Fatal(err)
	}
	client := filepath.Join(dir, "c.json")
	os.WriteFile(client, []byte(`{"mcpServers":{"fs":{"command":"npx","args":["x"]}}}`), 0o600)
	out, err := exec.Command(tbBin, "servers", "import", client, "--write", "--config", link).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "wrote 1 server to "+real) {
		t.Fatalf("import --write: %v\n%s", err, out)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("the config is no longer a symlink: %v %v", fi.Mode(), err)
	}
	if b, _ := os.ReadFile(real); !strings.Contains(string(b), "[servers.fs]") || !strings.Contains(string(b), "grant") {
		t.Fatalf("the linked file:\n%s", b)
	}
}

// Import against the real npm registry: an npx package without a version
// is pinned to the exact version the registry has now (the one `npm view`
// names for that version, with its integrity), and a lookalike of the
// official scope is left out, with the flag that takes it; config check
// accepts what was written.
func TestServersImportPinsPackagesAndHoldsLookalikes(t *testing.T) {
	long(t)
	dir := t.TempDir()
	desktop := filepath.Join(dir, "claude_desktop_config.json")
	os.WriteFile(desktop, []byte(`{"mcpServers": {
		"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"squat": {"command": "npx", "args": ["-y", "@moddelcontextprotocol/server-memory"]}}}`), 0o600)
	out, err := exec.Command(tbBin, "servers", "import", desktop).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := regexp.MustCompile(`"@modelcontextprotocol/server-memory@(\d+\.\d+\.\d+)"`).FindStringSubmatch(string(out))
	if m == nil || !strings.Contains(string(out), "registry integrity sha512-") {
		t.Fatalf("server-memory is not pinned with its integrity:\n%s", out)
	}
	if v, err := exec.Command("npm", "view", "@modelcontextprotocol/server-memory@"+m[1], "version").Output(); err != nil || strings.TrimSpace(string(v)) != m[1] {
		t.Fatalf("the registry does not have the pinned version %s: %v %s", m[1], err, v)
	}
	if strings.Contains(string(out), "[servers.squat]") || !strings.Contains(string(out), "--accept-lookalike squat") {
		t.Fatalf("the lookalike was imported, or not explained:\n%s", out)
	}
	cfgPath := filepath.Join(dir, "tracebridge.toml")
	out, err = exec.Command(tbBin, "servers", "import", desktop, "--accept-lookalike", "squat", "--write", "--config", cfgPath).CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if b, _ := os.ReadFile(cfgPath); !strings.Contains(string(b), "[servers.squat]") {
		t.Fatalf("--accept-lookalike did not take it:\n%s", b)
	}
	if out, err := exec.Command(tbBin, "config", "check", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
}
