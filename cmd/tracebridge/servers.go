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
$TRACEBRIDGE_CONFIG, else tracebridge.toml in the user config dir): the servers
it has already are left as they are, and named.`

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
	servers, format, err := config.ParseClient(b)
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
	// The entry names the file the sections go to unless the bridge finds
	// it by itself (the default file): a --config or $TRACEBRIDGE_CONFIG
	// the client does not have would leave it with the built-in tools.
	path, named := m.configPath(*cfgFlag)
	// --write adds the servers the config lacks and reports the rest.
	var have []string
	if *write && path != "" {
		if c, err := config.Load(path); err == nil {
			have = slices.Sorted(maps.Keys(c.Servers))
		}
	}
	im := config.Import(servers, have...)
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
	line := format.Entry(self, entryCfg, im.ClientEnv)
	if *write {
		if path == "" {
			return errors.New("no config file to write to: pass --config FILE")
		}
		if len(im.Kept) > 0 {
			fmt.Fprintf(m.Stdout, "left out %d servers %s has already: %s (edit them there)\n", len(im.Kept), path, strings.Join(im.Kept, ", "))
		}
		if len(im.Servers) == 0 {
			fmt.Fprintf(m.Stdout, "nothing new to write: %s has every server of %s\n", path, src)
		} else {
			wrote, err := config.AppendServers(path, im.TOML)
			if err != nil {
				return err
			}
			via := ""
			if wrote != path {
				via = " (the file " + path + " links to)"
			}
			fmt.Fprintf(m.Stdout, "wrote %d servers to %s%s: %s (check it: tracebridge config check --config %s)\n", len(im.Servers), wrote, via, strings.Join(im.Servers, ", "), path)
		}
	} else {
		fmt.Fprintf(m.Stdout, "# tracebridge.toml: the servers of %s, behind tracebridge\n%s", src, im.TOML)
	}
	for _, n := range im.Notes {
		fmt.Fprintln(m.Stdout, "# note: "+n)
	}
	fmt.Fprintf(m.Stdout, "\n# The client entry that replaces them (in %s):\n%s\n", filepath.Base(src), line)
	return nil
}
