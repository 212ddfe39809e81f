package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/tracebridge/tracebridge/bridge/config"
)

const configHelp = `config check [FILE]

Validates tracebridge.toml (FILE, else --config's default: $TRACEBRIDGE_CONFIG,
else tracebridge.toml in the user config dir) and explains each problem with its
line. Exit 0 when valid (or when no file exists: the defaults apply), 1 otherwise.

The file:

  [approval]
  mode = "prompt"        # deny | allow | prompt (an operator decides); default prompt
  timeout = "2m"         # prompt: no decision in time is a denial

  [policy]
  grant = ["text.search", "trace.read", "workspace.read"]   # the default grants
  deny = ["some_tool"]   # tool ids always denied
  read_only_without_log = true   # may read-only tools run when the log cannot be written?

  [tools.regex_text_search]
  approval = "always"    # always | never: override the tool's requirement
  secrets = ["GITHUB"]   # secret references the tool receives
  timeout = "30s"

  [secrets.GITHUB]
  env = "GITHUB_TOKEN"   # or: file = "/run/secrets/github"

  [discovery]
  dirs = ["~/.config/tracebridge/tools"]   # *.tool.json manifests; off when empty

  [pipe]
  timeout = "5s"         # one call to the workspace host

Capabilities: text.search, trace.read, workspace.read, workspace.write, process.run
(discovered tools always need process.run).`

func runConfig(_ context.Context, m *Main, args []string) error {
	fs := m.flags("config")
	if err := m.parse(fs, configHelp, args); err != nil {
		return err
	}
	if fs.NArg() == 0 || fs.Arg(0) != "check" || fs.NArg() > 2 {
		return usageError{"want: config check [FILE]"}
	}
	path := fs.Arg(1)
	if path == "" {
		path = m.Getenv("TRACEBRIDGE_CONFIG")
	}
	if path == "" {
		path = m.defaultConfigPath()
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			d := config.Default()
			fmt.Fprintf(m.Stdout, "no config file at %s: the defaults apply (approval %s, timeout %s; grants %s)\n",
				path, d.Approval.Mode, d.Approval.Timeout, strings.Join(d.Policy.Grant, ", "))
			return nil
		}
	}
	c, err := config.Load(path)
	if err != nil {
		fmt.Fprintln(m.Stdout, err)
		return errFound
	}
	fmt.Fprintf(m.Stdout, "ok: %s (approval %s, %d tool overrides, %d secrets, %d discovery dirs)\n",
		path, c.Approval.Mode, len(c.Tools), len(c.Secrets), len(c.Discovery.Dirs))
	return nil
}
