// Package config reads tracebridge.toml: policy grants, approval mode and
// per-tool overrides, secret references, tool discovery and the upstream
// MCP servers of the gateway.
//
// A missing file means the documented safe defaults (Default). A file that
// does not parse or does not validate is reported with its line numbers;
// the bridge then fails closed (every tool denied) rather than guess.
//
// config keeps the file's shape; what decides a call lives in package
// policy ([policy.rules] is a map of policy.Rule, compiled by Rules), and
// config versions it (PolicyVersion).
package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	toml "github.com/pelletier/go-toml/v2"

	"github.com/tracebridge/tracebridge/policy"
)

// Config is the parsed file.
type Config struct {
	Approval  Approval              `toml:"approval"`
	Policy    Policy                `toml:"policy"`
	Tools     map[string]ToolConfig `toml:"tools"`
	Secrets   map[string]Secret     `toml:"secrets"`
	Discovery Discovery             `toml:"discovery"`
	Pipe      Pipe                  `toml:"pipe"`
	Servers   map[string]Server     `toml:"servers"`
	OTLP      OTLP                  `toml:"otlp"`
	Retention Retention             `toml:"retention"`
	Cluster   Cluster               `toml:"cluster"`
	Guard     Guard                 `toml:"guard"`
	Gateway   Gateway               `toml:"gateway"`
	Auth      Auth                  `toml:"auth"`
	// LSP names the language servers the workspace host drives, by
	// language ([lsp.go], [lsp.typescript], …); a language left out keeps
	// its default when the binary is on PATH.
	LSP map[string]LanguageServer `toml:"lsp"`

	// Path is the file read, "" for defaults.
	Path string `toml:"-"`
	// lines maps each key of the file to its line, for problems found
	// after Parse (Unknown).
	lines map[string]int
}

// LanguageServer is one language's server ([lsp.NAME]).
type LanguageServer struct {
	Command    []string `toml:"command"`    // e.g. ["gopls"], no shell
	Extensions []string `toml:"extensions"` // e.g. [".go"]; default: the language's usual ones
	Timeout    string   `toml:"timeout"`    // one request; default 10s
	// TSServer is the tsserver.js typescript-language-server runs; default:
	// the TypeScript installed beside it, never the workspace's.
	TSServer string `toml:"tsserver"`
}

// Approval says how calls of tools that require approval are answered.
type Approval struct {
	// Mode is deny, allow or prompt (an operator decides with
	// `tracebridge approvals`). Default prompt.
	Mode string `toml:"mode"`
	// Timeout bounds a prompt; no decision in time is a denial. Default 2m.
	Timeout string `toml:"timeout"`
	// Deciders are the groups ([auth]) whose members may approve a call;
	// empty: whoever may decide in the UI.
	Deciders []string `toml:"deciders"`
	// FourEyes asks for an approver other than the user who made the call:
	// "off" (default), "destructive" (tools with side effects or a
	// destructiveHint) or "all".
	FourEyes string `toml:"four_eyes"`
	// DeciderMembers are the cluster members (their NATS users) whose
	// decisions count for every member's calls; a member's own always do.
	DeciderMembers []string `toml:"decider_members"`
}

// Four-eyes settings.
const (
	FourEyesOff         = "off"
	FourEyesDestructive = "destructive"
	FourEyesAll         = "all"
)

// Policy grants capabilities and denies tools.
type Policy struct {
	// Grant lists the capabilities tools may use. Default: DefaultGrants.
	Grant []string `toml:"grant"`
	// Deny lists tool ids that are always denied.
	Deny []string `toml:"deny"`
	// ReadOnlyWithoutLog lets read-only tools run while the event log cannot
	// be written. Side-effecting tools never do. Default true.
	ReadOnlyWithoutLog *bool `toml:"read_only_without_log"`
	// Rules decide calls by their arguments and context ([policy.rules.NAME],
	// rules.go), after the grants and denials above.
	Rules map[string]policy.Rule `toml:"rules"`
}

// ToolConfig overrides one tool's descriptor.
type ToolConfig struct {
	// Approval is always or never; empty keeps the descriptor's.
	Approval string `toml:"approval"`
	// Secrets adds secret references the tool receives.
	Secrets []string `toml:"secrets"`
	// Timeout bounds one run. Default 30s.
	Timeout string `toml:"timeout"`
}

// Secret is where a secret's value comes from: exactly one of Env or File.
type Secret struct {
	Env  string `toml:"env"`
	File string `toml:"file"`
}

// Discovery names directories of *.tool.json manifests. Empty: off.
type Discovery struct {
	Dirs []string `toml:"dirs"`
}

// Pipe configures the bridge's calls to the workspace host.
type Pipe struct {
	// Timeout bounds one call to the host. Default 5s.
	Timeout string `toml:"timeout"`
}

// PipeTimeout is the parsed pipe timeout (5s by default).
func (c *Config) PipeTimeout() time.Duration {
	if d := positive(c.Pipe.Timeout); d > 0 {
		return d
	}
	return 5 * time.Second
}

// Capabilities the built-in tools use.
const (
	CapTextSearch       = "text.search"
	CapTraceRead        = "trace.read"
	CapWorkspaceRead    = "workspace.read"
	CapWorkspacePropose = "workspace.propose" // propose edits (written only after an operator approves)
	CapWorkspaceWrite   = "workspace.write"
	CapProcessRun       = "process.run"
)

// DefaultGrants are granted when the file names none: reading, searching
// and proposing edits (each written only after an operator approves it),
// never writing or running processes.
var DefaultGrants = []string{CapTextSearch, CapTraceRead, CapWorkspaceRead, CapWorkspacePropose}

// Approval modes.
const (
	ModeDeny   = "deny"
	ModeAllow  = "allow"
	ModePrompt = "prompt"
)

// Default is the configuration used when no file exists.
func Default() *Config {
	c := &Config{}
	c.fill()
	return c
}

func (c *Config) fill() {
	if c.Approval.Mode == "" {
		c.Approval.Mode = ModePrompt
	}
	if c.Approval.Timeout == "" {
		c.Approval.Timeout = "2m"
	}
	if c.Policy.Grant == nil {
		c.Policy.Grant = slices.Clone(DefaultGrants)
	}
	if c.Policy.ReadOnlyWithoutLog == nil {
		t := true
		c.Policy.ReadOnlyWithoutLog = &t
	}
}

// ApprovalTimeout is the parsed prompt timeout.
func (c *Config) ApprovalTimeout() time.Duration {
	d, _ := ParseDuration(c.Approval.Timeout)
	return d
}

// ToolTimeout is the run timeout of tool id (default 30s).
func (c *Config) ToolTimeout(id string) time.Duration {
	if d := positive(c.Tools[id].Timeout); d > 0 {
		return d
	}
	return 30 * time.Second
}

// Problem is one thing wrong with a file, at a line.
type Problem struct {
	Line int
	Key  string
	Msg  string
}

// ProblemsError lists every problem found in one file.
type ProblemsError struct {
	Path     string
	Problems []Problem
}

func (e *ProblemsError) Error() string {
	var b strings.Builder
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s:%d: ", e.Path, p.Line)
		if p.Key != "" {
			b.WriteString(p.Key + ": ")
		}
		b.WriteString(p.Msg)
	}
	return b.String()
}

// Load reads path. A missing file is an error; callers that want defaults
// for an absent default location check os.ErrNotExist.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return Parse(path, b)
}

// Parse reads a file's bytes; path only names it in errors.
func Parse(path string, b []byte) (*Config, error) {
	c := &Config{Path: path}
	dec := toml.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(c); err != nil {
		return nil, &ProblemsError{Path: path, Problems: decodeProblems(err)}
	}
	c.lines = keyLines(b)
	if probs := c.validate(c.lines); len(probs) > 0 {
		return nil, &ProblemsError{Path: path, Problems: probs}
	}
	c.fill()
	return c, nil
}

func decodeProblems(err error) []Problem {
	var strict *toml.StrictMissingError
	if errors.As(err, &strict) {
		var out []Problem
		for _, e := range strict.Errors {
			row, _ := e.Position()
			out = append(out, Problem{Line: row, Key: strings.Join(e.Key(), "."), Msg: "unknown key (see `tracebridge config check --help` for the keys)"})
		}
		return out
	}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		row, _ := de.Position()
		return []Problem{{Line: row, Key: strings.Join(de.Key(), "."), Msg: plainTypeError(de.Error())}}
	}
	return []Problem{{Line: 1, Msg: plainTypeError(err.Error())}}
}

// typeErrRE matches go-toml's type mismatch, which names Go's types.
var typeErrRE = regexp.MustCompile(`cannot decode TOML (\w+) into struct field \S+ of type (\S+)`)

// plainTypeError says a type mismatch in the file's words: what was
// written, what the key wants.
func plainTypeError(msg string) string {
	m := typeErrRE.FindStringSubmatch(msg)
	if m == nil {
		return strings.TrimPrefix(msg, "toml: ")
	}
	want := map[string]string{"string": "a quoted string (\"2m\", \"prompt\")", "[]string": "a list of strings ([\"a\", \"b\"])",
		"*bool": "true or false", "bool": "true or false", "map[string]string": "a table of strings ({ KEY = \"value\" })"}[m[2]]
	if want == "" {
		want = "another type"
	}
	return fmt.Sprintf("a TOML %s is written here, but the key wants %s", m[1], want)
}

func (c *Config) validate(lines map[string]int) []Problem {
	var out []Problem
	bad := func(key, format string, args ...any) {
		out = append(out, Problem{Line: lineOf(lines, key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	c.validateTimes(bad)
	c.validateLSP(bad)
	c.validatePolicy(lines, bad)
	c.validateTools(bad)
	c.validateServers(bad)
	c.validateOTLP(bad)
	c.validateAuth(bad)
	c.validateRetention(bad)
	c.validateCluster(bad)
	c.validateGuard(bad)
	for _, name := range sortedKeys(c.Secrets) {
		s := c.Secrets[name]
		if (s.Env == "") == (s.File == "") {
			bad("secrets."+name, "set exactly one of env or file")
		}
	}
	return out
}

// validateTimes checks [approval] and [pipe].
func (c *Config) validateTimes(bad func(key, format string, args ...any)) {
	switch c.Approval.Mode {
	case "", ModeDeny, ModeAllow, ModePrompt:
	default:
		bad("approval.mode", "%q is not one of deny, allow, prompt", c.Approval.Mode)
	}
	switch c.Approval.FourEyes {
	case "", FourEyesOff, FourEyesDestructive, FourEyesAll:
	default:
		bad("approval.four_eyes", "%q is not one of off, destructive, all", c.Approval.FourEyes)
	}
	if (len(c.Approval.Deciders) > 0 || c.Approval.FourEyes == FourEyesDestructive || c.Approval.FourEyes == FourEyesAll) && c.Auth.UIClientID == "" {
		bad("approval.deciders", "deciders and four_eyes name people the UI signed in: set [auth] ui_client_id (and issuer), or no approval would count")
	}
	if c.Approval.Timeout != "" && positive(c.Approval.Timeout) == 0 {
		bad("approval.timeout", "%q is not a positive duration such as \"90s\" or \"5m\"", c.Approval.Timeout)
	}
	if c.Pipe.Timeout != "" && positive(c.Pipe.Timeout) == 0 {
		bad("pipe.timeout", "%q is not a positive duration such as \"5s\"", c.Pipe.Timeout)
	}
}

// validateLSP checks each [lsp.NAME].
func (c *Config) validateLSP(bad func(key, format string, args ...any)) {
	for _, name := range sortedKeys(c.LSP) {
		l := c.LSP[name]
		if len(l.Command) == 0 || l.Command[0] == "" {
			bad("lsp."+name, "command is required: the language server and its arguments, e.g. [\"gopls\"]")
		}
		for _, e := range l.Extensions {
			if !strings.HasPrefix(e, ".") || strings.ContainsAny(e, "/ \t") {
				bad("lsp."+name+".extensions", "%q is not a file extension such as \".go\"", e)
			}
		}
		if l.Timeout != "" && positive(l.Timeout) == 0 {
			bad("lsp."+name+".timeout", "%q is not a positive duration such as \"10s\"", l.Timeout)
		}
	}
}

// validatePolicy checks [policy]: grants, deny patterns, and each rule
// (its problem placed on the field's line when it names one).
func (c *Config) validatePolicy(lines map[string]int, bad func(key, format string, args ...any)) {
	for _, g := range c.Policy.Grant {
		if g == "" || strings.ContainsAny(g, " \t") {
			bad("policy.grant", "capability %q is empty or has spaces", g)
		}
	}
	for _, d := range c.Policy.Deny {
		if _, err := path.Match(d, ""); err != nil || d == "" {
			bad("policy.deny", "%q is not a tool id or a valid pattern (use * and ?, as in \"github__delete_*\")", d)
		}
	}
	for _, name := range sortedKeys(c.Policy.Rules) {
		for _, p := range policy.Check(name, c.Policy.Rules[name]) {
			key := "policy.rules." + name
			for _, field := range []string{"when", "effect", "tools"} {
				if _, ok := lines[key+"."+field]; ok && (strings.HasPrefix(p, field+" ") || strings.HasPrefix(p, field+":")) {
					key += "." + field
				}
			}
			bad(key, "%s", p)
		}
	}
}

// validateTools checks each [tools.ID].
func (c *Config) validateTools(bad func(key, format string, args ...any)) {
	for _, id := range sortedKeys(c.Tools) {
		t := c.Tools[id]
		switch t.Approval {
		case "", "always", "never":
		default:
			bad("tools."+id+".approval", "%q is not one of always, never", t.Approval)
		}
		if t.Timeout != "" && positive(t.Timeout) == 0 {
			bad("tools."+id+".timeout", "%q is not a positive duration", t.Timeout)
		}
		for _, s := range t.Secrets {
			if _, ok := c.Secrets[s]; !ok {
				bad("tools."+id+".secrets", "secret %q is not defined (add a [secrets.%s] table with env or file)", s, s)
			}
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
