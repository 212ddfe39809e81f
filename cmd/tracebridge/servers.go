package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

const serversHelp = `servers import FILE [--write] [--config FILE]
servers login NAME [--config FILE] [--no-browser]

Moves the MCP servers of an existing client configuration behind tracebridge in
one step. FILE is the client's config:

  Claude Desktop   claude_desktop_config.json ("mcpServers")
  Cursor           ~/.cursor/mcp.json or .cursor/mcp.json ("mcpServers")
  VS Code          .vscode/mcp.json ("servers", with "type")
  Claude Code      .mcp.json, or ~/.claude.json (top level and per project)

It prints the [servers.NAME] sections for tracebridge.toml and the one client
entry that replaces all of them: tracebridge mcp, which starts each server when
it is first used and puts every call through policy, approval and the log.
Values that look like secrets (env keys and headers named like TOKEN, KEY,
SECRET, PASSWORD, AUTH…) become ${secret:NAME} references to environment
variables the client entry passes to tracebridge, so no secret is written to
tracebridge.toml. --write appends the sections to the config file (default:
$TRACEBRIDGE_CONFIG, else tracebridge.toml in the user config dir), refusing
server names it already has.`

// clientServer is one server entry of a client's config (every format's
// fields; the unused ones stay empty).
type clientServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

func runServers(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("servers")
	write := fs.Bool("write", false, "append the sections to the config file instead of only printing them")
	cfgFlag := fs.String("config", "", "the tracebridge.toml `FILE` --write appends to (login: reads)")
	noBrowser := fs.Bool("no-browser", false, "login: print the authorization URL instead of opening a browser")
	if err := m.parse(fs, serversHelp+"\n\n"+loginHelp, args); err != nil {
		return err
	}
	if fs.NArg() == 2 && fs.Arg(0) == "login" {
		return runServersLogin(ctx, m, fs.Arg(1), *cfgFlag, *noBrowser)
	}
	if fs.NArg() != 2 || fs.Arg(0) != "import" {
		return usageError{"want: servers import FILE [--write], or servers login NAME"}
	}
	src := fs.Arg(1)
	b, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("read the client config: %w", err)
	}
	servers, format, err := parseClientConfig(b)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	if len(servers) == 0 {
		return fmt.Errorf("%s names no MCP servers (looked for \"mcpServers\" and \"servers\")", src)
	}
	self, err := os.Executable()
	if err != nil {
		self = "tracebridge"
	}
	toml, clientEnv, notes := importServers(servers)
	// The entry names the file the sections go to unless the bridge finds
	// it by itself (the default file): a --config or $TRACEBRIDGE_CONFIG
	// the client does not have would leave it with the built-in tools.
	path, named := m.configPath(*cfgFlag)
	named = named && path != m.defaultConfigPath()
	if named {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
	}
	entryCfg := ""
	if named {
		entryCfg = path
	}
	line := format.entry(self, entryCfg, clientEnv)
	if *write {
		if path == "" {
			return errors.New("no config file to write to: pass --config FILE")
		}
		wrote, err := appendServers(path, toml)
		if err != nil {
			return err
		}
		via := ""
		if wrote != path {
			via = " (the file " + path + " links to)"
		}
		fmt.Fprintf(m.Stdout, "wrote %d servers to %s%s (check it: tracebridge config check --config %s)\n", len(servers), wrote, via, path)
	} else {
		fmt.Fprintf(m.Stdout, "# tracebridge.toml: the servers of %s, behind tracebridge\n%s", src, toml)
	}
	for _, n := range notes {
		fmt.Fprintln(m.Stdout, "# note: "+n)
	}
	fmt.Fprintf(m.Stdout, "\n# The client entry that replaces them (in %s):\n%s\n", filepath.Base(src), line)
	return nil
}

// parseClientConfig reads the servers of any of the four clients' formats.
func parseClientConfig(b []byte) (map[string]clientServer, clientFormat, error) {
	var doc struct {
		MCPServers map[string]clientServer `json:"mcpServers"`
		Servers    map[string]clientServer `json:"servers"`
		Inputs     json.RawMessage         `json:"inputs"`
		Projects   map[string]struct {
			MCPServers map[string]clientServer `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(stripJSONComments(b), &doc); err != nil {
		return nil, clientFormat{}, fmt.Errorf("not a client's MCP config (JSON): %v", err)
	}
	format := clientFormat{vscode: len(doc.Servers) > 0 && len(doc.MCPServers) == 0, inputs: doc.Inputs}
	out := map[string]clientServer{}
	add := func(m map[string]clientServer) {
		for k, v := range m {
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	add(doc.MCPServers)
	add(doc.Servers)
	projects := make([]string, 0, len(doc.Projects))
	for p := range doc.Projects {
		projects = append(projects, p)
	}
	sort.Strings(projects)
	for _, p := range projects {
		add(doc.Projects[p].MCPServers)
	}
	delete(out, "tracebridge") // already behind it
	return out, format, nil
}

// clientFormat is what the replacing client entry must look like: VS Code
// names its servers "servers", gives each a type, and keeps its "inputs"
// (prompted values its env may use).
type clientFormat struct {
	vscode bool
	inputs json.RawMessage
}

// entry is the client config that replaces the imported servers; cfg is
// the tracebridge.toml it must name ("" for the default one).
func (f clientFormat) entry(self, cfg string, env map[string]string) []byte {
	args := []string{"mcp"}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	client := map[string]any{"command": self, "args": args}
	if len(env) > 0 {
		client["env"] = env
	}
	doc := map[string]any{"mcpServers": map[string]any{"tracebridge": client}}
	if f.vscode {
		client["type"] = "stdio"
		doc = map[string]any{"servers": map[string]any{"tracebridge": client}}
		if len(f.inputs) > 0 {
			doc["inputs"] = f.inputs
		}
	}
	b, _ := json.Marshal(doc)
	return b
}

// stripJSONComments drops // line comments (VS Code's mcp.json allows
// them), leaving strings alone.
func stripJSONComments(b []byte) []byte {
	var out bytes.Buffer
	inStr, esc := false, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr:
			out.WriteByte(c)
			if esc {
				esc = false
			} else if c == '\\' {
				esc = true
			} else if c == '"' {
				inStr = false
			}
		case c == '"':
			inStr = true
			out.WriteByte(c)
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
		default:
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

var (
	secretKeyRE  = regexp.MustCompile(`(?i)(token|secret|passw|api[_-]?key|access[_-]?key|private[_-]?key|auth|credential|pat$|cookie|session)`)
	envRefRE     = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	notNameChars = regexp.MustCompile(`[^A-Za-z0-9-]+`)
	notEnvChars  = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// importServers turns client entries into [servers.*] sections (sorted by
// name). Secret-looking values become references to environment variables
// the client entry passes to tracebridge (clientEnv).
func importServers(in map[string]clientServer) (toml string, clientEnv map[string]string, notes []string) {
	clientEnv = map[string]string{}
	names := make([]string, 0, len(in))
	for n := range in {
		names = append(names, n)
	}
	sort.Strings(names)
	var secrets, servers strings.Builder
	used := map[string]bool{}
	for _, orig := range names {
		s := in[orig]
		name := strings.Trim(notNameChars.ReplaceAllString(orig, "-"), "-")
		if len(name) > 32 {
			name = name[:32]
		}
		if name == "" {
			name = "server"
		}
		for base, i := name, 2; used[name]; i++ {
			name = fmt.Sprintf("%s-%d", base, i)
		}
		used[name] = true
		if name != orig {
			notes = append(notes, fmt.Sprintf("server %q is called %q here (names prefix tool names: letters, digits, '-')", orig, name))
		}
		ref := func(field, key, value string) string {
			if m := envRefRE.FindStringSubmatch(value); m != nil && m[0] == value { // VS Code's ${env:VAR}
				secret := strings.ToUpper(notEnvChars.ReplaceAllString(m[1], "_"))
				fmt.Fprintf(&secrets, "[secrets.%s]\nenv = %s\n\n", secret, tomlString(m[1]))
				return "${secret:" + secret + "}"
			}
			if strings.Contains(value, "${input:") {
				notes = append(notes, fmt.Sprintf("server %s: %s %s is asked for by VS Code (%s): the tracebridge entry's env carries the prompt, and its inputs are kept", name, field, key, value))
			}
			if !secretKeyRE.MatchString(key) || value == "" {
				return value
			}
			envName := strings.ToUpper(notEnvChars.ReplaceAllString("TB_"+name+"_"+key, "_"))
			clientEnv[envName] = value
			fmt.Fprintf(&secrets, "[secrets.%s]\nenv = %s\n\n", envName, tomlString(envName))
			return "${secret:" + envName + "}"
		}
		fmt.Fprintf(&servers, "[servers.%s]\n", name)
		if s.URL != "" || s.Type == "http" || s.Type == "sse" || s.Type == "streamable-http" {
			if safe := events.SafeURL(s.URL); safe != s.URL {
				notes = append(notes, fmt.Sprintf("server %s: its URL holds what looks like a credential (recorded as %s): if the server takes it in a header, move it to headers = { NAME = \"${secret:…}\" }", name, safe))
			}
			fmt.Fprintf(&servers, "url = %s\n", tomlString(s.URL))
			if s.Type == "sse" {
				servers.WriteString("transport = \"sse\"\n")
			}
			if len(s.Headers) > 0 {
				servers.WriteString("headers = " + tomlTable(s.Headers, func(k, v string) string { return ref("header", k, v) }) + "\n")
			}
		} else {
			if _, flags := events.ArgCredentials(s.Args); len(flags) > 0 {
				notes = append(notes, fmt.Sprintf("server %s: the value of argument %s looks like a credential: every local user sees argv (ps); it is recorded redacted, but pass it in env as a ${secret:…} if the server reads one", name, strings.Join(flags, ", ")))
			}
			fmt.Fprintf(&servers, "command = %s\n", tomlString(s.Command))
			if len(s.Args) > 0 {
				parts := make([]string, len(s.Args))
				for i, a := range s.Args {
					parts[i] = tomlString(a)
				}
				fmt.Fprintf(&servers, "args = [%s]\n", strings.Join(parts, ", "))
			}
			if s.Cwd != "" {
				fmt.Fprintf(&servers, "cwd = %s\n", tomlString(s.Cwd))
			}
			if len(s.Env) > 0 {
				servers.WriteString("env = " + tomlTable(s.Env, func(k, v string) string { return ref("env", k, v) }) + "\n")
			}
		}
		servers.WriteString("\n")
	}
	return secrets.String() + servers.String(), clientEnv, notes
}

// tomlString writes s as a TOML basic string (JSON's escapes are TOML's).
func tomlString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return strings.TrimSpace(b.String())
}

// tomlTable writes m as an inline table with sorted keys, each value
// passed through f.
func tomlTable(m map[string]string, f func(k, v string) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(f(k, m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// appendServers adds the imported sections to the config at path (created
// 0600 when missing), refusing names it already has and checking that the
// result still parses. A symlinked config is written where it points (the
// link stays a link); it returns the file written.
func appendServers(path, sections string) (string, error) {
	imported, err := config.Parse("the imported sections", []byte(sections))
	if err != nil {
		return "", err
	}
	if target, err := filepath.EvalSymlinks(path); err == nil {
		path = target
	}
	old, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	if len(old) > 0 {
		c, err := config.Parse(path, old)
		if err != nil {
			return "", fmt.Errorf("the config file is broken already; fix it first:\n%w", err)
		}
		for name := range c.Servers {
			if _, dup := imported.Servers[name]; dup {
				return "", fmt.Errorf("%s already has [servers.%s]: remove it first, or import without --write and merge by hand", path, name)
			}
		}
	}
	next := []byte(sections)
	if len(old) > 0 {
		next = append(append(bytes.TrimRight(old, "\n"), '\n', '\n'), sections...)
	}
	if _, err := config.Parse(path, next); err != nil {
		return "", fmt.Errorf("the imported sections do not fit %s (nothing written):\n%w", path, err)
	}
	if err := durable.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, durable.WriteFileAtomic(path, next, 0o600)
}
