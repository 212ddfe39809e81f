package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/identity"
)

const serversHelp = `servers import FILE [--write] [--config FILE] [--project DIR] [--workspace DIR] [--no-pin] [--accept-lookalike NAMES]
servers list [--config FILE] [--json]
servers test NAME [--config FILE]
servers login NAME [--config FILE] [--no-browser] [--user SUB --issuer URL]

list shows each configured server, its sandbox and what its last start ran:
the executable, its SHA-256, the uid, the confinement applied. test starts a
command server once as the gateway would (confined, its env and secrets),
lists its tools, and prints what it held open and what it was refused: the
first thing to run when a confined server fails.

Moves the MCP servers of an existing client configuration behind tracebridge in
one step. FILE is the client's config:

  Claude Desktop   claude_desktop_config.json ("mcpServers")
  Cursor           ~/.cursor/mcp.json or .cursor/mcp.json ("mcpServers")
  VS Code          .vscode/mcp.json ("servers", with "type")
  Claude Code      .mcp.json, or ~/.claude.json (user scope; --project DIR adds
                   that project's own servers, which win as in Claude Code)

It prints the [servers.NAME] sections for tracebridge.toml and the one client
entry that replaces all of them: tracebridge mcp, which starts each server when
it is first used and puts every call through policy, approval and the log.
Values that look like secrets (env keys and headers named like TOKEN, KEY,
SECRET, PASSWORD, AUTH…) become ${secret:NAME} references to environment
variables the client entry passes to tracebridge, so no secret is written to
tracebridge.toml. A server's envFile (VS Code, Cursor) is loaded by the client
for the tracebridge entry instead, and its variables named like secrets are
read as secrets (its other settings are written as plain values).
A package run through npx or uvx without an exact version is pinned to the
version its registry has now (npm view; --no-pin leaves it), the registry's
integrity in a comment; a package a few letters from a well-known one (say
@moddelcontextprotocol/server-memory) is left out until you confirm it with
--accept-lookalike NAME. VS Code's ${workspaceFolder} becomes the workspace's path: the folder holding
the imported .vscode/mcp.json, or --workspace DIR. --write appends the sections
to the config file (default: $TRACEBRIDGE_CONFIG, else tracebridge.toml in the
user config dir): the servers it has already are left as they are, and named.

A tool whose server does not annotate it readOnlyHint: true needs approval for
every call. Once a client has listed the tools, tracebridge tools list says
which; mark those that only read with [servers.NAME] read_only = ["pattern"].`

func runServers(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("servers")
	var o importOptions
	fs.BoolVar(&o.write, "write", false, "append the sections to the config file instead of only printing them")
	cfgFlag := fs.String("config", "", "the tracebridge.toml `FILE` --write appends to (login: reads)")
	asJSON := fs.Bool("json", false, "list: as JSON")
	noBrowser := fs.Bool("no-browser", false, "login: print the authorization URL instead of opening a browser")
	var who identity.User
	fs.StringVar(&who.Subject, "user", "", "login: the user (`SUB`, their subject at the [auth] issuer) whose own authorization this is, for a per_user server")
	fs.StringVar(&who.Issuer, "issuer", "", "login: the [auth] issuer (`URL`) --user is a subject of (default: [auth] issuer)")
	fs.StringVar(&o.project, "project", "", "import: also the servers of Claude Code's project `DIR` (~/.claude.json)")
	fs.StringVar(&o.lookalikes, "accept-lookalike", "", "import: the servers (`NAMES`, comma-separated) whose package is a few letters from a well-known one, confirmed as meant")
	fs.BoolVar(&o.noPin, "no-pin", false, "import: leave npx/uvx packages at the version as written (default: pinned to the registry's version now)")
	fs.StringVar(&o.workspace, "workspace", "", "import: the folder VS Code's ${workspaceFolder} names (`DIR`; default: the one holding .vscode/mcp.json)")
	if err := m.parse(fs, serversHelp+"\n\n"+loginHelp, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() == 2 && fs.Arg(0) == "login":
		return runServersLogin(ctx, m, fs.Arg(1), *cfgFlag, *noBrowser, who)
	case fs.NArg() == 1 && fs.Arg(0) == "list":
		return m.listServers(ctx, *cfgFlag, *asJSON)
	case fs.NArg() == 2 && fs.Arg(0) == "test":
		return m.testServer(ctx, *cfgFlag, fs.Arg(1))
	case fs.NArg() != 2 || fs.Arg(0) != "import":
		return usageError{"want: servers import FILE [--write], servers list, servers test NAME, or servers login NAME"}
	}
	o.src, o.cfgFlag = fs.Arg(1), *cfgFlag
	return m.importServers(o)
}

// importOptions is what `servers import` was asked.
type importOptions struct {
	src, cfgFlag       string // the client's config; --config
	write              bool
	project, workspace string
	lookalikes         string // --accept-lookalike
	noPin              bool
}

// importServers reads a client's config and prints (or appends) the
// [servers.NAME] sections and the client entry that replaces them.
func (m *Main) importServers(o importOptions) error {
	servers, format, ws, err := readClientConfig(o)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		self = "tracebridge"
	}
	// The entry names the file the sections go to unless the bridge finds
	// it by itself (the default file): a --config or $TRACEBRIDGE_CONFIG
	// the client does not have would leave it with the built-in tools.
	path, named := m.configPath(o.cfgFlag)
	// --write adds the servers the config lacks and reports the rest.
	var have []string
	if o.write && path != "" {
		if c, err := config.Load(path); err == nil {
			have = slices.Sorted(maps.Keys(c.Servers))
		}
	}
	iopts := config.ImportOptions{Have: have, Workspace: ws, Resolve: resolvePackage}
	if o.noPin {
		iopts.Resolve = nil
	}
	for _, n := range strings.Split(o.lookalikes, ",") {
		if n = strings.TrimSpace(n); n != "" {
			iopts.AcceptLookalike = append(iopts.AcceptLookalike, n)
		}
	}
	im := config.Import(servers, iopts)
	for _, dir := range slices.Sorted(maps.Keys(format.Projects)) {
		im.Notes = append(im.Notes, fmt.Sprintf("Claude Code project %s has servers of its own (%s), not imported: add them with --project %s", dir, strings.Join(format.Projects[dir], ", "), dir))
	}
	entryCfg := ""
	if named && path != m.defaultConfigPath() {
		if abs, err := filepath.Abs(path); err == nil {
			path = abs
		}
		entryCfg = path
	}
	line := format.Entry(self, entryCfg, im)
	if o.write {
		if err := m.appendImported(path, o.src, im); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(m.Stdout, "# tracebridge.toml: the servers of %s, behind tracebridge\n%s", o.src, im.TOML)
	}
	im.Notes = append(im.Notes, "tools not annotated readOnlyHint: true need approval for every call: once a client has listed them, `tracebridge tools list` names them; mark those that only read with [servers.NAME] read_only = [\"pattern\"]")
	for _, n := range im.Notes {
		fmt.Fprintln(m.Stdout, "# note: "+n)
	}
	fmt.Fprintf(m.Stdout, "\n# The client entry that replaces them (in %s):\n%s\n", filepath.Base(o.src), line)
	return nil
}

// readClientConfig parses the client's config (with Claude Code's project
// o.project) and finds the workspace VS Code's ${workspaceFolder} names.
func readClientConfig(o importOptions) (map[string]config.ClientServer, config.ClientFormat, string, error) {
	b, err := os.ReadFile(o.src)
	if err != nil {
		return nil, config.ClientFormat{}, "", fmt.Errorf("read the client config: %w", err)
	}
	proj := o.project
	if proj != "" {
		if proj, err = filepath.Abs(proj); err != nil {
			return nil, config.ClientFormat{}, "", err
		}
	}
	servers, format, err := config.ParseClient(b, proj)
	switch {
	case err != nil:
		return nil, format, "", fmt.Errorf("%s: %w", o.src, err)
	case len(servers) == 0 && len(format.Projects) > 0:
		return nil, format, "", fmt.Errorf("%s names no MCP servers of its own, only per project: pass --project DIR for one of %s", o.src, strings.Join(slices.Sorted(maps.Keys(format.Projects)), ", "))
	case len(servers) == 0:
		return nil, format, "", fmt.Errorf("%s names no MCP servers (looked for \"mcpServers\" and \"servers\")", o.src)
	}
	ws := o.workspace
	if abs, err := filepath.Abs(o.src); err == nil && ws == "" && filepath.Base(filepath.Dir(abs)) == ".vscode" {
		ws = filepath.Dir(filepath.Dir(abs))
	} else if ws != "" {
		if ws, err = filepath.Abs(ws); err != nil {
			return nil, format, "", err
		}
	}
	return servers, format, ws, nil
}

// appendImported appends the imported servers path lacks to it.
func (m *Main) appendImported(path, src string, im config.Imported) error {
	if path == "" {
		return errors.New("no config file to write to: pass --config FILE")
	}
	if len(im.Kept) > 0 {
		fmt.Fprintf(m.Stdout, "left out %d servers %s has already: %s (edit them there)\n", len(im.Kept), path, strings.Join(im.Kept, ", "))
	}
	if len(im.Servers) == 0 {
		fmt.Fprintf(m.Stdout, "nothing new to write: %s has every server of %s\n", path, src)
		return nil
	}
	wrote, err := config.AppendServers(path, im.TOML)
	if err != nil {
		return err
	}
	via := ""
	if wrote != path {
		via = " (the file " + path + " links to)"
	}
	noun := "servers"
	if len(im.Servers) == 1 {
		noun = "server"
	}
	fmt.Fprintf(m.Stdout, "wrote %d %s to %s%s: %s (check it: tracebridge config check --config %s)\n", len(im.Servers), noun, wrote, via, strings.Join(im.Servers, ", "), path)
	return nil
}
