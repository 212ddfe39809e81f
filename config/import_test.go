package config

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every client's format reads into the same servers: Claude Desktop's and
// Cursor's mcpServers, VS Code's servers (comments, inputs, a typed
// entry), Claude Code's per-project mcpServers; tracebridge's own entry is
// left out.
func TestParseClientReadsEveryFormat(t *testing.T) {
	for file, vscode := range map[string]bool{"claude_desktop_config.json": false, "cursor_mcp.json": false, "vscode_mcp.json": true, "claude_code.json": false} {
		b, err := os.ReadFile(filepath.Join("testdata", "clients", file))
		if err != nil {
			t.Fatal(err)
		}
		servers, format, err := ParseClient(b, "")
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(servers) == 0 || format.VSCode != vscode {
			t.Errorf("%s: %d servers, vscode %v", file, len(servers), format.VSCode)
		}
		if _, ok := servers["tracebridge"]; ok {
			t.Errorf("%s: tracebridge's own entry was imported", file)
		}
		entry := string(format.Entry("/bin/tb", "", Imported{ClientEnv: map[string]string{"TB_X": "v"}}))
		if vscode != strings.Contains(entry, `"type":"stdio"`) || !strings.Contains(entry, `"args":["mcp"]`) || !strings.Contains(entry, `"TB_X":"v"`) {
			t.Errorf("%s: entry %s", file, entry)
		}
	}
	if _, _, err := ParseClient([]byte("not json"), ""); err == nil || !strings.Contains(err.Error(), "not a client's MCP config") {
		t.Fatalf("bad JSON: %v", err)
	}
}

// Import writes no secret into the sections: a secret-looking env or
// header value moves to the client entry's env behind a ${secret:…}, VS
// Code's ${env:VAR} becomes a secret read from VAR; names clients reject
// are renamed and noted; the sections parse.
func TestImportMovesSecretsOut(t *testing.T) {
	im := Import(map[string]ClientServer{
		"my server/1": {Command: "npx", Args: []string{"-y", "pkg", "--token", "argv-secret-123"}, Env: map[string]string{"API_KEY": "env-secret-456", "MODE": "fast"}},
		"remote":      {Type: "http", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer hdr-secret-789"}},
		"vs":          {Command: "srv", Env: map[string]string{"GITHUB_TOKEN": "${env:GH_TOKEN}", "ASK": "${input:ask}"}},
	}, ImportOptions{})
	for _, secret := range []string{"env-secret-456", "hdr-secret-789"} {
		if strings.Contains(im.TOML, secret) {
			t.Errorf("the sections hold %s:\n%s", secret, im.TOML)
		}
	}
	if im.ClientEnv["TB_MY-SERVER-1_API_KEY"] != "env-secret-456" && im.ClientEnv["TB_MY_SERVER_1_API_KEY"] != "env-secret-456" {
		t.Errorf("client env: %v", im.ClientEnv)
	}
	for _, want := range []string{"[servers.my-server-1]", `"MODE" = "fast"`, "[secrets.GH_TOKEN]\nenv = \"GH_TOKEN\"", `"GITHUB_TOKEN" = "${secret:GH_TOKEN}"`, `url = "https://mcp.example.com/mcp"`} {
		if !strings.Contains(im.TOML, want) {
			t.Errorf("the sections lack %q:\n%s", want, im.TOML)
		}
	}
	notes := strings.Join(im.Notes, "\n")
	for _, want := range []string{`"my server/1" is called "my-server-1"`, "--token", "${input:ask}"} {
		if !strings.Contains(notes, want) {
			t.Errorf("the notes lack %q:\n%s", want, notes)
		}
	}
	if _, err := Parse("imported", []byte(im.TOML)); err != nil {
		t.Fatalf("the sections do not parse: %v\n%s", err, im.TOML)
	}
}

// AppendServers adds sections to an existing file, refuses a name it has,
// and leaves a broken file alone.
func TestAppendServersRefusesWhatItWouldBreak(t *testing.T) {
	path := filepath.Join(t.TempDir(), "conf", "tracebridge.toml")
	sections := Import(map[string]ClientServer{"fs": {Command: "server-filesystem"}}, ImportOptions{}).TOML
	if wrote, err := AppendServers(path, sections); err != nil || wrote != path {
		t.Fatalf("into a new file: %q %v", wrote, err)
	}
	if _, err := AppendServers(path, sections); err == nil || !strings.Contains(err.Error(), "already has [servers.fs]") {
		t.Fatalf("the same server again: %v", err)
	}
	os.WriteFile(path, []byte("[policy\n"), 0o600)
	if _, err := AppendServers(path, Import(map[string]ClientServer{"other": {Command: "x"}}, ImportOptions{}).TOML); err == nil || !strings.Contains(err.Error(), "broken already") {
		t.Fatalf("into a broken file: %v", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "[policy\n" {
		t.Fatalf("the broken file was changed: %q", b)
	}
}

// Any client config either fails to parse with an error, or imports into
// sections tracebridge.toml accepts.
func FuzzParseClient(f *testing.F) {
	for _, name := range []string{"claude_desktop_config.json", "vscode_mcp.json", "claude_code.json"} {
		b, _ := os.ReadFile(filepath.Join("testdata", "clients", name))
		f.Add(b)
	}
	f.Add([]byte(`{"mcpServers":{"a b/c":{"command":"x\"y","args":["${secret:X}"],"env":{"TOKEN":"\u0000"}}}}`))
	f.Add([]byte("// only a comment\n{\"servers\":{}}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		servers, _, err := ParseClient(b, "")
		if err != nil {
			return
		}
		sections := Import(servers, ImportOptions{ReadFile: func(string) ([]byte, error) { return []byte("A=1\nexport B=2\n"), nil }}).TOML
		if _, err := Parse("imported", []byte(sections)); err != nil && len(servers) > 0 {
			var pe *ProblemsError
			if !errors.As(err, &pe) {
				t.Fatalf("not a ProblemsError: %v", err)
			}
			for _, p := range pe.Problems {
				// What a client's entry may lack (no command, a URL that is
				// not http) is reported by config check; the import itself
				// must never write TOML that does not parse.
				if strings.Contains(p.Msg, "unknown key") || p.Key == "" {
					t.Fatalf("the import wrote TOML that does not parse:\n%s\n%v", sections, err)
				}
			}
		}
	})
}

// Importing again adds what is new: a server the config has already is
// left out and named; a secret key that starts with its server's name is
// not named twice (TB_SQLITE_API_TOKEN, not TB_SQLITE_SQLITE_API_TOKEN);
// JSON with comments and trailing commas (VS Code, Claude Code) is read.
func TestImportAddsWhatIsNewAndReadsJSONC(t *testing.T) {
	servers, _, err := ParseClient([]byte(`{
	  // the user's servers
	  "mcpServers": {
	    "sqlite": {"command": "mcp-sqlite", "env": {"SQLITE_API_TOKEN": "t0k3n",},},
	    /* an old one */ "fs": {"command": "server-filesystem", "args": ["/tmp",],},
	  },
	}`), "")
	if err != nil {
		t.Fatalf("JSONC: %v", err)
	}
	im := Import(servers, ImportOptions{Have: []string{"fs"}})
	if !slices.Equal(im.Kept, []string{"fs"}) || !slices.Equal(im.Servers, []string{"sqlite"}) || strings.Contains(im.TOML, "[servers.fs]") {
		t.Fatalf("kept %v, imported %v:\n%s", im.Kept, im.Servers, im.TOML)
	}
	if _, ok := im.ClientEnv["TB_SQLITE_API_TOKEN"]; !ok || strings.Contains(im.TOML, "SQLITE_SQLITE") {
		t.Fatalf("the secret's env name: %v\n%s", im.ClientEnv, im.TOML)
	}
	// The client entry still passes the secrets of a server left out.
	if again := Import(servers, ImportOptions{Have: []string{"sqlite", "fs"}}); len(again.Servers) != 0 || again.ClientEnv["TB_SQLITE_API_TOKEN"] != "t0k3n" {
		t.Fatalf("the secret's env name: %v\n%s", im.ClientEnv, im.TOML)
	}
	if _, err := Parse("imported", []byte(im.TOML)); err != nil {
		t.Fatal(err)
	}
	// A comma inside a string is the string's.
	if got := string(jsonc([]byte(`{"a": "x,}", "b": [1, 2,],}`))); got != `{"a": "x,}", "b": [1, 2 ] }` {
		t.Fatalf("jsonc: %s", got)
	}
}

// Claude Code's scopes stay apart: ~/.claude.json's user servers alone, or
// with one project's own (which win, as in Claude Code); the other
// projects' are named, not merged.
func TestParseClientKeepsClaudeCodeScopes(t *testing.T) {
	b := []byte(`{
	  "mcpServers": {"sentry": {"url": "https://mcp.sentry.dev/mcp"}, "db": {"command": "user-db"}},
	  "projects": {
	    "/home/me/app": {"mcpServers": {"db": {"command": "app-db"}}},
	    "/home/me/other": {"mcpServers": {"secret-tool": {"command": "other"}}},
	    "/home/me/empty": {"mcpServers": {}}
	  }
	}`)
	user, format, err := ParseClient(b, "")
	if err != nil || len(user) != 2 || user["db"].Command != "user-db" {
		t.Fatalf("user scope: %v %v", user, err)
	}
	if len(format.Projects) != 2 || !slices.Equal(format.Projects["/home/me/other"], []string{"secret-tool"}) {
		t.Fatalf("projects named: %v", format.Projects)
	}
	app, format, err := ParseClient(b, "/home/me/app/")
	if err != nil || len(app) != 2 || app["db"].Command != "app-db" || app["secret-tool"].Command != "" {
		t.Fatalf("with the app project: %v %v", app, err)
	}
	if _, ok := format.Projects["/home/me/app"]; ok {
		t.Fatalf("the imported project is named as left out: %v", format.Projects)
	}
	if _, _, err := ParseClient(b, "/nowhere"); err == nil || !strings.Contains(err.Error(), "/home/me/app") {
		t.Fatalf("an unknown project: %v", err)
	}
}

// VS Code's envFile is loaded by the client for the tracebridge entry, its
// secret-named variables read as secrets (no secret value reaches the
// sections; env wins over the file) and its other settings written as
// plain values — a short one (DEBUG=1) as a secret could not be redacted
// and kept the server from starting (issue 46 B5); ${workspaceFolder}
// becomes the workspace's path, or is kept and noted when the workspace is
// not known.
func TestImportEnvFileAndWorkspaceFolder(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, ".env"), []byte("# keys\nGITHUB_TOKEN=ghp_filesecret123\nexport MODE=slow\nLOG=debug\nDEBUG=\"1\"\n"), 0o600)
	servers, _, err := ParseClient([]byte(`{"servers": {"gh": {"type": "stdio", "command": "${workspaceFolder}/bin/gh-mcp",
	  "args": ["--root", "${workspaceFolder}", "--name", "${workspaceFolderBasename}"], "envFile": "${workspaceFolder}/.env", "env": {"LOG": "info"}}}}`), "")
	if err != nil {
		t.Fatal(err)
	}
	im := Import(servers, ImportOptions{Workspace: ws})
	if strings.Contains(im.TOML, "ghp_filesecret123") || strings.Contains(im.TOML, "${workspaceFolder") || strings.Contains(im.TOML, "${secret:DEBUG}") {
		t.Fatalf("the sections:\n%s", im.TOML)
	}
	for _, want := range []string{`command = "` + ws + `/bin/gh-mcp"`, `"--root", "` + ws + `"`, `"--name", "` + filepath.Base(ws) + `"`,
		"[secrets.GITHUB_TOKEN]\nenv = \"GITHUB_TOKEN\"", `"GITHUB_TOKEN" = "${secret:GITHUB_TOKEN}"`, `"MODE" = "slow"`, `"DEBUG" = "1"`, `"LOG" = "info"`} {
		if !strings.Contains(im.TOML, want) {
			t.Errorf("the sections lack %s:\n%s", want, im.TOML)
		}
	}
	if im.EnvFile != "${workspaceFolder}/.env" {
		t.Errorf("the entry's envFile: %q", im.EnvFile)
	}
	if c, err := Parse("imported", []byte(im.TOML)); err != nil || c.Servers["gh"].Command == "" {
		t.Fatalf("the sections do not parse: %v", err)
	}
	entry := string(ClientFormat{VSCode: true}.Entry("/bin/tb", "", im))
	if !strings.Contains(entry, `"envFile":"${workspaceFolder}/.env"`) {
		t.Errorf("the entry: %s", entry)
	}

	unknown := Import(servers, ImportOptions{ReadFile: func(string) ([]byte, error) { return nil, os.ErrNotExist }})
	if !strings.Contains(unknown.TOML, "${workspaceFolder}/bin/gh-mcp") || !strings.Contains(strings.Join(unknown.Notes, "\n"), "--workspace DIR") ||
		!strings.Contains(strings.Join(unknown.Notes, "\n"), "envFile") || unknown.EnvFile != "" {
		t.Fatalf("without the workspace: notes %q\n%s", unknown.Notes, unknown.TOML)
	}
}
