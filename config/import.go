package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/durable"
)

// ClientServer is one server entry of an AI client's config (every
// format's fields; the unused ones stay empty).
type ClientServer struct {
	Type    string            `json:"type"`
	Command string            `json:"command"`
	Args    []string          `json:"args"`
	Env     map[string]string `json:"env"`
	EnvFile string            `json:"envFile"` // VS Code, Cursor: a dotenv file the client loads into the server's env
	Cwd     string            `json:"cwd"`
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers"`
}

// ClientFormat is what the replacing client entry must look like: VS Code
// names its servers "servers", gives each a type, and keeps its "inputs"
// (prompted values its env may use).
type ClientFormat struct {
	VSCode bool
	Inputs json.RawMessage
	// Projects are Claude Code's projects (~/.claude.json) whose own
	// servers were not imported, with their servers' names.
	Projects map[string][]string
}

// ParseClient reads the servers of any of the clients' formats: Claude
// Desktop's and Cursor's "mcpServers", VS Code's "servers" (with //
// comments and "inputs"), Claude Code's user-scope "mcpServers" and, for
// project (a directory; "" for none), that project's own servers of
// ~/.claude.json, which win over the user's of the same name as they do
// in Claude Code; the other projects' are listed in the format, not
// imported. An entry called tracebridge is left out: it is behind
// tracebridge already.
func ParseClient(b []byte, project string) (map[string]ClientServer, ClientFormat, error) {
	var doc struct {
		MCPServers map[string]ClientServer `json:"mcpServers"`
		Servers    map[string]ClientServer `json:"servers"`
		Inputs     json.RawMessage         `json:"inputs"`
		Projects   map[string]struct {
			MCPServers map[string]ClientServer `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(jsonc(b), &doc); err != nil {
		return nil, ClientFormat{}, fmt.Errorf("not a client's MCP config (JSON): %v", err)
	}
	format := ClientFormat{VSCode: len(doc.Servers) > 0 && len(doc.MCPServers) == 0, Inputs: doc.Inputs}
	out := map[string]ClientServer{}
	add := func(m map[string]ClientServer) {
		for k, v := range m {
			if _, dup := out[k]; !dup {
				out[k] = v
			}
		}
	}
	if p, ok := doc.Projects[filepath.Clean(project)]; ok && project != "" {
		add(p.MCPServers) // local scope first: it wins
	} else if project != "" {
		return nil, format, fmt.Errorf("no project %s in it (its projects: %s)", project, strings.Join(slices.Sorted(maps.Keys(doc.Projects)), ", "))
	}
	add(doc.MCPServers)
	add(doc.Servers)
	for dir, p := range doc.Projects {
		if len(p.MCPServers) > 0 && filepath.Clean(dir) != filepath.Clean(project) {
			if format.Projects == nil {
				format.Projects = map[string][]string{}
			}
			format.Projects[dir] = slices.Sorted(maps.Keys(p.MCPServers))
		}
	}
	delete(out, "tracebridge")
	return out, format, nil
}

// Entry is the client config that replaces the imported servers: self
// (this binary) run as `mcp`, naming cfg ("" for the default file), with
// im's env (the secrets Import moved out of the sections) and env file.
func (f ClientFormat) Entry(self, cfg string, im Imported) []byte {
	args := []string{"mcp"}
	if cfg != "" {
		args = append(args, "--config", cfg)
	}
	client := map[string]any{"command": self, "args": args}
	if len(im.ClientEnv) > 0 {
		client["env"] = im.ClientEnv
	}
	if im.EnvFile != "" {
		client["envFile"] = im.EnvFile
	}
	doc := map[string]any{"mcpServers": map[string]any{"tracebridge": client}}
	if f.VSCode {
		client["type"] = "stdio"
		doc = map[string]any{"servers": map[string]any{"tracebridge": client}}
		if len(f.Inputs) > 0 {
			doc["inputs"] = f.Inputs
		}
	}
	b, _ := json.Marshal(doc)
	return b
}

// jsonc is b, written as JSON with comments (VS Code's and Claude Code's
// files are), as plain JSON: // and /* */ comments and the comma before a
// closing bracket dropped, strings left alone.
func jsonc(b []byte) []byte {
	var out bytes.Buffer
	inStr, esc := false, false
	comma := -1 // where in out a comma waits to see what follows it
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
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			for i < len(b) && b[i] != '\n' {
				i++
			}
			out.WriteByte('\n')
			continue
		case c == '/' && i+1 < len(b) && b[i+1] == '*':
			end := bytes.Index(b[i+2:], []byte("*/"))
			if end < 0 {
				return append(out.Bytes(), b[i:]...) // unterminated: JSON says where
			}
			i += end + 3
			out.WriteByte(' ')
			continue
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			out.WriteByte(c)
			continue
		case (c == '}' || c == ']') && comma >= 0:
			out.Bytes()[comma] = ' ' // a trailing comma
		}
		comma = -1
		switch c {
		case '"':
			inStr = true
		case ',':
			comma = out.Len()
		}
		out.WriteByte(c)
	}
	return out.Bytes()
}

var (
	secretKeyRE  = regexp.MustCompile(`(?i)(token|secret|passw|api[_-]?key|access[_-]?key|private[_-]?key|auth|credential|pat$|cookie|session)`)
	envRefRE     = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	notNameChars = regexp.MustCompile(`[^A-Za-z0-9-]+`)
	notEnvChars  = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// Imported is a client's servers as tracebridge.toml sections.
type Imported struct {
	TOML      string            // [secrets.*] then [servers.*], sorted by name
	ClientEnv map[string]string // the secret values the client entry passes in its env
	// EnvFile is the env file the client entry has the client load (a
	// server's envFile, as the client names it): the sections read its
	// variables as secrets.
	EnvFile string
	Notes   []string // what the operator should know: renames, credentials left in URLs or argv, VS Code inputs
	Servers []string // the servers imported, by their names here
	Kept    []string // the servers left out: the config has them already
	// Lookalikes are the servers left out because their package is a few
	// edits from a well-known one (ImportOptions.AcceptLookalike takes
	// them).
	Lookalikes []string
}

// ImportOptions is what Import needs besides the client's servers.
type ImportOptions struct {
	// Have are the config's servers: a client's server of one of these
	// names is left out and listed in Kept (importing a client's file
	// again adds what is new).
	Have []string
	// Workspace is the folder VS Code's ${workspaceFolder} names: the one
	// whose .vscode/mcp.json is imported. "": the variable is kept, and
	// noted.
	Workspace string
	// ReadFile reads a server's envFile (nil: os.ReadFile).
	ReadFile func(string) ([]byte, error)
	// Resolve pins a package a server runs through npx or uvx without an
	// exact version to the version its registry has now (nil: left as
	// written, and noted).
	Resolve ResolveFunc
	// AcceptLookalike names the servers whose package may be a few edits
	// from a well-known one: the operator confirmed it is the one meant.
	AcceptLookalike []string
}

// Import turns client entries into [servers.*] sections. Secret-looking
// values (by their key) become ${secret:…} references to environment
// variables the client entry passes to tracebridge, VS Code's ${env:VAR}
// references to secrets read from VAR, and the secret-named variables of
// an envFile references to secrets read from the same variables, which the
// client entry has the client load from that file (its other variables are
// plain values); no secret is written to the sections. VS Code's ${workspaceFolder} becomes the workspace's path.
func Import(in map[string]ClientServer, opts ImportOptions) Imported {
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	im := &importer{out: Imported{ClientEnv: map[string]string{}}, used: map[string]bool{}, secretsDone: map[string]bool{}, opts: opts}
	// The packages a lookalike may imitate: the well-known ones and those
	// of the other servers imported.
	known := slices.Clone(WellKnownPackages)
	for _, s := range in {
		if p, ok := RunnerPackage(s.Command, s.Args); ok {
			known = append(known, p.Name)
		}
	}
	for _, orig := range slices.Sorted(maps.Keys(in)) {
		if im.lookalike(orig, in[orig], known) {
			continue
		}
		if name := im.plainName(orig); slices.Contains(opts.Have, name) {
			im.out.Kept = append(im.out.Kept, name)
			// Its sections are the config's; the client entry still
			// passes the secrets and the env file they read.
			kept := &importer{out: Imported{ClientEnv: im.out.ClientEnv, EnvFile: im.out.EnvFile}, used: map[string]bool{}, secretsDone: map[string]bool{}, opts: opts}
			kept.server(orig, in[orig])
			im.out.EnvFile = kept.out.EnvFile
			continue
		}
		im.server(orig, in[orig])
	}
	im.out.TOML = im.secrets.String() + im.servers.String()
	return im.out
}

type importer struct {
	out              Imported
	opts             ImportOptions
	secrets, servers strings.Builder
	used             map[string]bool
	secretsDone      map[string]bool // [secrets.*] sections written
	vars             bool            // a ${workspaceFolder} was kept: noted once
}

// secret writes [secrets.name] reading env, once.
func (im *importer) secret(name, env string) {
	if !im.secretsDone[name] {
		im.secretsDone[name] = true
		fmt.Fprintf(&im.secrets, "[secrets.%s]\nenv = %s\n\n", name, tomlString(env))
	}
}

// expand replaces VS Code's workspace variables in s with the workspace's
// path, when it is known.
func (im *importer) expand(server, s string) string {
	if !strings.Contains(s, "${workspaceFolder") {
		return s
	}
	if im.opts.Workspace == "" {
		if !im.vars {
			im.vars = true
			im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: ${workspaceFolder} is kept as written (tracebridge does not expand it): import with --workspace DIR to name the folder", server))
		}
		return s
	}
	s = strings.ReplaceAll(s, "${workspaceFolderBasename}", filepath.Base(im.opts.Workspace))
	return strings.ReplaceAll(s, "${workspaceFolder}", im.opts.Workspace)
}

// name is a server's name in tracebridge (letters, digits, '-', at most
// 32, unique), noted when it differs from the client's.
func (im *importer) name(orig string) string {
	name := im.plainName(orig)
	for base, i := name, 2; im.used[name]; i++ {
		name = fmt.Sprintf("%s-%d", base, i)
	}
	im.used[name] = true
	if name != orig {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %q is called %q here (names prefix tool names: letters, digits, '-')", orig, name))
	}
	return name
}

// plainName is orig as a name here, before it is made unique.
func (im *importer) plainName(orig string) string {
	name := strings.Trim(notNameChars.ReplaceAllString(orig, "-"), "-")
	if len(name) > 32 {
		name = name[:32]
	}
	if name == "" {
		name = "server"
	}
	return name
}

// lookalike reports whether orig runs a package a few edits from a
// well-known one (or another imported server's) that the operator has not
// confirmed: such a server is left out, with a note saying how to take it.
func (im *importer) lookalike(orig string, s ClientServer, known []string) bool {
	p, ok := RunnerPackage(s.Command, s.Args)
	if !ok {
		return false
	}
	var others []string
	for _, k := range known {
		if k != p.Name {
			others = append(others, k)
		}
	}
	like := Lookalike(p.Name, others)
	name := im.plainName(orig)
	if like == "" || slices.Contains(im.opts.AcceptLookalike, name) {
		return false
	}
	im.out.Lookalikes = append(im.out.Lookalikes, name)
	im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s is NOT imported: it runs the package %s, a few letters from %s (a typo-squat looks like this): if %s is the one you meant, import again with --accept-lookalike %s",
		name, p.Name, like, p.Name, name))
	return true
}

// pin rewrites a package run through npx or uvx without an exact version
// to the version its registry has now; the comment it returns records it
// (and the registry's integrity).
func (im *importer) pin(name string, s *ClientServer) string {
	p, ok := RunnerPackage(s.Command, s.Args)
	if !ok || p.Pinned() {
		return ""
	}
	if im.opts.Resolve == nil {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s runs %s at whatever version its registry serves that day: pin it (%s)", name, p, p.Spec("X.Y.Z")))
		return ""
	}
	r, err := im.opts.Resolve(p)
	if err != nil {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: %s could not be pinned (%v): it runs whatever version its registry serves that day; pin it by hand (%s)", name, p, err, p.Spec("X.Y.Z")))
		return ""
	}
	s.Args[p.Arg] = p.Spec(r.Version)
	im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: %s is pinned to %s, the version its registry has now (change it on purpose)", name, p, r.Version))
	comment := fmt.Sprintf("# servers import pinned %s", p.Spec(r.Version))
	if r.Integrity != "" {
		comment += ", registry integrity " + r.Integrity
	}
	return comment + "\n"
}

func (im *importer) server(orig string, s ClientServer) {
	name := im.name(orig)
	s.Command, s.Cwd, s.URL = im.expand(name, s.Command), im.expand(name, s.Cwd), im.expand(name, s.URL)
	s.Args = slices.Clone(s.Args)
	for i := range s.Args {
		s.Args[i] = im.expand(name, s.Args[i])
	}
	pinned := im.pin(name, &s)
	env := maps.Clone(s.Env)
	if env == nil && s.EnvFile != "" {
		env = map[string]string{}
	}
	for k, v := range env {
		env[k] = im.expand(name, v)
	}
	s.Env = env
	im.out.Servers = append(im.out.Servers, name)
	fmt.Fprintf(&im.servers, "[servers.%s]\n%s", name, pinned)
	if s.URL != "" || s.Type == "http" || s.Type == "sse" || s.Type == "streamable-http" {
		im.remote(name, s)
	} else {
		im.local(name, s)
	}
	im.servers.WriteString("\n")
}

func (im *importer) remote(name string, s ClientServer) {
	if safe := events.SafeURL(s.URL); safe != s.URL {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: its URL holds what looks like a credential (recorded as %s): if the server takes it in a header, move it to headers = { NAME = \"${secret:…}\" }", name, safe))
	}
	fmt.Fprintf(&im.servers, "url = %s\n", tomlString(s.URL))
	if s.Type == "sse" {
		im.servers.WriteString("transport = \"sse\"\n")
	}
	if len(s.Headers) > 0 {
		im.servers.WriteString("headers = " + tomlTable(s.Headers, func(k, v string) string { return im.ref(name, "header", k, v) }) + "\n")
	}
}

func (im *importer) local(name string, s ClientServer) {
	if _, flags := events.ArgCredentials(s.Args); len(flags) > 0 {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: the value of argument %s looks like a credential: every local user sees argv (ps); it is recorded redacted, but pass it in env as a ${secret:…} if the server reads one", name, strings.Join(flags, ", ")))
	}
	fmt.Fprintf(&im.servers, "command = %s\n", tomlString(s.Command))
	if len(s.Args) > 0 {
		parts := make([]string, len(s.Args))
		for i, a := range s.Args {
			parts[i] = tomlString(a)
		}
		fmt.Fprintf(&im.servers, "args = [%s]\n", strings.Join(parts, ", "))
	}
	if s.Cwd != "" {
		fmt.Fprintf(&im.servers, "cwd = %s\n", tomlString(s.Cwd))
	}
	if s.EnvFile != "" {
		im.envFile(name, s)
	}
	if len(s.Env) > 0 {
		im.servers.WriteString("env = " + tomlTable(s.Env, func(k, v string) string {
			if v == envFileRef {
				return "${secret:" + k + "}"
			}
			return im.ref(name, "env", k, v)
		}) + "\n")
	}
}

// envFileRef marks an env entry that comes from the server's envFile.
const envFileRef = "\x00envFile"

// envFile adds the variables of s's envFile to s.Env as secrets read from
// the same variables: the client entry has the client load the file, as
// it did for the server, so its values never reach the sections. An entry
// of env wins over the file's, as in the client.
func (im *importer) envFile(name string, s ClientServer) {
	path := im.expand(name, s.EnvFile)
	b, err := im.opts.ReadFile(path)
	if err != nil {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: its envFile %s could not be read (%v): its variables are not passed; import again when it exists", name, path, err))
		return
	}
	if im.out.EnvFile != "" && im.out.EnvFile != s.EnvFile {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: its envFile %s is not passed (the tracebridge entry loads one, %s): add its variables to that file or to the entry's env", name, s.EnvFile, im.out.EnvFile))
		return
	}
	im.out.EnvFile = s.EnvFile
	vars := dotenv(b)
	for _, k := range slices.Sorted(maps.Keys(vars)) {
		if _, set := s.Env[k]; set {
			continue
		}
		// Only what is named like a secret is one (as for env): a short
		// setting (DEBUG=1) as a secret could not be redacted, and would
		// keep the server from starting.
		if !secretKeyRE.MatchString(k) {
			s.Env[k] = vars[k]
			continue
		}
		s.Env[k] = envFileRef
		im.secret(k, k)
	}
}

// dotenv is the variables a dotenv file sets (KEY=value lines, with an
// optional export and optional quotes; comments and blank lines skipped),
// the first of a repeated key kept.
func dotenv(b []byte) map[string]string {
	vars := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "export "))
		k, v, ok := strings.Cut(line, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
			v = v[1 : len(v)-1]
		}
		if _, seen := vars[k]; ok && !strings.HasPrefix(line, "#") && envNameRE.MatchString(k) && !seen {
			vars[k] = v
		}
	}
	return vars
}

// ref is what an env or header value becomes in the sections: a secret
// reference for VS Code's ${env:VAR} and for a secret-looking key, else
// the value.
func (im *importer) ref(server, field, key, value string) string {
	if m := envRefRE.FindStringSubmatch(value); m != nil && m[0] == value {
		secret := strings.ToUpper(notEnvChars.ReplaceAllString(m[1], "_"))
		im.secret(secret, m[1])
		return "${secret:" + secret + "}"
	}
	if strings.Contains(value, "${input:") {
		im.out.Notes = append(im.out.Notes, fmt.Sprintf("server %s: %s %s is asked for by VS Code (%s): the tracebridge entry's env carries the prompt, and its inputs are kept", server, field, key, value))
	}
	if !secretKeyRE.MatchString(key) || value == "" {
		return value
	}
	envName := strings.ToUpper(notEnvChars.ReplaceAllString("TB_"+server+"_"+key, "_"))
	if prefix := strings.ToUpper(notEnvChars.ReplaceAllString(server+"_", "_")); strings.HasPrefix(strings.ToUpper(key), prefix) {
		envName = strings.ToUpper(notEnvChars.ReplaceAllString("TB_"+key, "_")) // SQLITE_API_TOKEN of server sqlite: TB_SQLITE_API_TOKEN
	}
	im.out.ClientEnv[envName] = value
	im.secret(envName, envName)
	return "${secret:" + envName + "}"
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
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = tomlString(k) + " = " + tomlString(f(k, m[k]))
	}
	return "{ " + strings.Join(parts, ", ") + " }"
}

// AppendServers adds imported sections to the config at path (created
// 0600 when missing), refusing names it already has and checking that the
// result still parses. A symlinked config is written where it points (the
// link stays a link); it returns the file written.
func AppendServers(path, sections string) (string, error) {
	imported, err := Parse("the imported sections", []byte(sections))
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
	next := []byte(sections)
	if len(old) > 0 {
		c, err := Parse(path, old)
		if err != nil {
			return "", fmt.Errorf("the config file is broken already; fix it first:\n%w", err)
		}
		for name := range c.Servers {
			if _, dup := imported.Servers[name]; dup {
				return "", fmt.Errorf("%s already has [servers.%s]: remove it first, or import without --write and merge by hand", path, name)
			}
		}
		next = append(append(bytes.TrimRight(old, "\n"), '\n', '\n'), sections...)
	}
	if _, err := Parse(path, next); err != nil {
		return "", fmt.Errorf("the imported sections do not fit %s (nothing written):\n%w", path, err)
	}
	if err := durable.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	return path, durable.WriteFileAtomic(path, next, 0o600)
}
