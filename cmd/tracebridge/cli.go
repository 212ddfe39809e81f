package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/hub"
)

// Version is set at build time with -ldflags "-X main.Version=…".
var Version = "dev"

// Main is the program with its environment made explicit, so tests run it
// in-process with their own streams and environment.
type Main struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	Getenv         func(string) string
	Now            func() time.Time

	// Global flags, bound by every command's flag set.
	data, logLevel string
	clusterFlags   clusterFlags
}

// NewMain returns a Main wired to the process.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr, Getenv: os.Getenv, Now: time.Now}
}

// command is one subcommand: what it does, the words that may follow it
// (what completion offers; TestCommandTreeMatchesDispatch checks that the
// command's own usage names each), and how it runs.
type command struct {
	summary string
	run     func(ctx context.Context, m *Main, args []string) error
	subs    []string
}

func verb(summary string, run func(ctx context.Context, m *Main, args []string) error, subs ...string) command {
	return command{summary: summary, run: run, subs: subs}
}

// verbOf refuses, before anything is opened, a word that is not one of
// command's subcommands; want says how they are used.
func verbOf(command string, rest []string, want string) error {
	if len(rest) == 0 || !slices.Contains(commands()[command].subs, rest[0]) {
		return usageError{want}
	}
	return nil
}

func commands() map[string]command {
	return map[string]command{
		"serve":      verb("run the hub for a data dir until interrupted", runServe),
		"tail":       verb("print events as they are committed", runTail),
		"verify":     verb("check the hash chain and checkpoints; exit 1 if broken", runVerify),
		"checkpoint": verb("export a signed checkpoint of the log's head", runCheckpoint, "export"),
		"loadgen":    verb("append synthetic requests and report durable throughput", runLoadgen),
		"demo":       verb("a scripted MCP session with a workspace host, its evidence, verify", runDemo),
		"version":    verb("print the version", runVersion),
		"mcp":        verb("serve MCP on stdio for an AI client, recording every call", runMCP),
		"approvals":  verb("list tool calls waiting for approval; show one whole; approve or deny one", runApprovals, "list", "show", "approve", "deny"),
		"config":     verb("check tracebridge.toml and explain its problems", runConfig, "check"),
		"host":       verb("run the workspace host for a directory (tools, proposals, reviews)", runHost),
		"focus":      verb("set the host's active document and selection", runFocus),
		"up":         verb("run the hub and the workspace host for a directory", runUp),
		"proposals":  verb("list, show, approve, reject, skip or reset proposed edits", runProposals, "list", "show", "approve", "reject", "skip", "reset"),
		"reviews":    verb("list the AI's reviews of the workspace, or print one", runReviews, "list", "show"),
		"replay":     verb("reconstruct one request and name the first boundary that failed", runReplay),
		"runs":       verb("list recorded runs with their status and verdict", runRuns),
		"rebuild":    verb("recompute projections from the start of the log", runRebuild),
		"session":    verb("export an MCP session to a file; re-drive recorded sessions and check drift", runSession, "list", "export", "replay"),
		"ui":         verb("print the URL (with its token) of the running operator UI", runUI),
		"completion": verb("print a shell completion script (bash, zsh, fish)", runCompletion, "bash", "zsh", "fish"),
		"servers":    verb("import a client's MCP servers (Claude Desktop, Cursor, VS Code, Claude Code) behind tracebridge", runServers, "import", "list", "test", "login"),
		"token":      verb("print the bearer token of `mcp --http`", runToken),
		"archive":    verb("move old events into a sealed, signed archive; the log stays verifiable", runArchive),
		"export":     verb("write the audit envelopes as JSON lines for a SIEM (--follow to stream)", runExport, "audit", "otlp"),
		"tools":      verb("list the pinned tools of upstream servers; diff and accept a changed one", runTools, "list", "diff", "accept"),
		"prune":      verb("remove old bridge log files and the demo's temp dirs (never the event log)", runPrune),
		"policy":     verb("re-decide the recorded calls under a candidate policy; explain one call's rules; list the guard's pack", runPolicy, "test", "explain", "pack"),
	}
}

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and found a problem, or failed
	exitUsage  = 2
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// failure is a finding (a broken chain) that sets exit 1 with a message
// already printed.
var errFound = errors.New("problem found")

// Run runs one command line and returns the exit code.
func (m *Main) Run(ctx context.Context, args []string) int {
	global := m.flags("tracebridge")
	version := global.Bool("version", false, "print the version and exit")
	global.Usage = func() { m.usage(global.Output()) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 1 && (rest[0] == "--version" || rest[0] == "-version") || *version {
		rest = []string{"version"}
	}
	if len(rest) == 0 {
		m.usage(m.Stderr)
		return exitUsage
	}
	name, rest := rest[0], rest[1:]
	if name == "help" {
		if len(rest) == 1 {
			if _, ok := commands()[rest[0]]; ok {
				return m.Run(ctx, []string{rest[0], "--help"})
			}
		}
		global.SetOutput(m.Stdout)
		m.usage(m.Stdout)
		return exitOK
	}
	cmd, ok := commands()[name]
	if !ok {
		fmt.Fprintf(m.Stderr, "tracebridge: unknown command %q\n\n", name)
		m.usage(m.Stderr)
		return exitUsage
	}
	err := cmd.run(ctx, m, rest)
	var uerr usageError
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &uerr):
		fmt.Fprintf(m.Stderr, "tracebridge %s: %s\nRun 'tracebridge %s --help' for usage.\n", name, uerr.msg, name)
		return exitUsage
	case errors.Is(err, errFound):
		return exitFailed
	default:
		fmt.Fprintf(m.Stderr, "tracebridge %s: %v\n", name, err)
		return exitFailed
	}
}

func (m *Main) usage(w io.Writer) {
	fmt.Fprint(w, `tracebridge: an MCP tool bridge that leaves evidence.

Usage:
  tracebridge [--data DIR] COMMAND [flags]

Commands:
`)
	cmds := commands()
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-11s %s\n", n, cmds[n].summary)
	}
	fmt.Fprint(w, `
Global flags (also accepted after the command):
  --data DIR         data dir (default $TRACEBRIDGE_DATA, else the user state dir)
  --log-level LEVEL  debug, info, warn or error (default info, or $TRACEBRIDGE_LOG)
  --nats-url URL     attach to a NATS JetStream cluster (default $TRACEBRIDGE_NATS_URL):
                     events go to its replicated stream, the data dir's store collects
                     everyone's (--nats-creds, --nats-nkey, --nats-ca/-cert/-key, --nats-stream)

Run 'tracebridge COMMAND --help' for a command's flags.
`)
}

// flags returns a flag set with the global flags registered.
func (m *Main) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(m.Stderr)
	fs.StringVar(&m.data, "data", m.data, "data `DIR` (default $TRACEBRIDGE_DATA, else the user state dir)")
	fs.StringVar(&m.logLevel, "log-level", m.logLevel, "log `LEVEL`: debug, info, warn, error")
	m.clusterFlags.register(fs)
	return fs
}

// parse parses a subcommand's flags, printing its usage on --help.
func (m *Main) parse(fs *flag.FlagSet, usage string, args []string) error {
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: tracebridge %s\n\n", usage)
		printFlags(fs.Output(), fs)
	}
	for _, a := range args {
		if a == "-h" || a == "--help" || a == "-help" {
			fs.SetOutput(m.Stdout)
		}
	}
	// Flags may follow positional arguments (`approvals list --json`): parse,
	// set the first positional aside, parse the rest, and so on.
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return err
			}
			return usageError{err.Error()}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			positional = append(positional, rest...) // everything after -- is positional
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
	if err := fs.Parse(append([]string{"--"}, positional...)); err != nil {
		return err
	}
	switch strings.ToLower(m.logLevel) {
	case "", "debug", "info", "warn", "error":
		return nil
	}
	return usageError{fmt.Sprintf("--log-level %q: want debug, info, warn or error", m.logLevel)}
}

// dataDir resolves the data dir: --data, $TRACEBRIDGE_DATA, then the user
// state dir; always absolute, so everything derived from it (the sockets
// hosts register in run/hosts/) means the same from any working directory.
func (m *Main) dataDir() (hub.DataDir, error) {
	d, err := m.dataDirAsGiven()
	if err != nil {
		return "", err
	}
	abs, err := filepath.Abs(string(d))
	if err != nil {
		return "", fmt.Errorf("data dir %s: %w", d, err)
	}
	return hub.DataDir(abs), nil
}

func (m *Main) dataDirAsGiven() (hub.DataDir, error) {
	if m.data != "" {
		return hub.DataDir(m.data), nil
	}
	if d := m.Getenv("TRACEBRIDGE_DATA"); d != "" {
		return hub.DataDir(d), nil
	}
	if runtime.GOOS == "windows" {
		if d := m.Getenv("LocalAppData"); d != "" {
			return hub.DataDir(filepath.Join(d, "tracebridge")), nil
		}
	}
	if d := m.Getenv("XDG_STATE_HOME"); d != "" {
		return hub.DataDir(filepath.Join(d, "tracebridge")), nil
	}
	if home := m.Getenv("HOME"); home != "" {
		return hub.DataDir(filepath.Join(home, ".local", "state", "tracebridge")), nil
	}
	return "", errors.New("no data dir: pass --data DIR or set TRACEBRIDGE_DATA")
}

// logger logs to stderr: stdout is for command output (and, for
// `tracebridge mcp`, for the protocol alone).
func (m *Main) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(m.Stderr, &slog.HandlerOptions{Level: m.level()}))
}

// level is --log-level, else $TRACEBRIDGE_LOG, else info.
func (m *Main) level() slog.Level {
	level := m.logLevel
	if level == "" {
		level = m.Getenv("TRACEBRIDGE_LOG")
	}
	var l slog.Level
	if err := l.UnmarshalText([]byte(strings.ToUpper(level))); err != nil || level == "" {
		l = slog.LevelInfo
	}
	return l
}

// openLog opens an existing log for a one-shot operator command: no log
// yet is an error at once (tail, which waits for one, uses open).
func (m *Main) openLog(ctx context.Context, name string) (*hub.Node, error) {
	dir, err := m.dataDir()
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir.Store()); err != nil {
		return nil, fmt.Errorf("no event log at %s; nothing has run on this data dir yet (check --data)", dir.Store())
	}
	return m.open(ctx, hub.Read, name)
}

// open opens the data dir's log in the given role.
func (m *Main) open(ctx context.Context, role hub.Role, name string) (*hub.Node, error) {
	dir, err := m.dataDir()
	if err != nil {
		return nil, err
	}
	return hub.Open(ctx, hub.Options{Dir: dir, Role: role, Logger: m.logger(), Now: m.Now, Name: name, Cluster: m.cluster()})
}

func runVersion(_ context.Context, m *Main, args []string) error {
	fs := m.flags("version")
	if err := m.parse(fs, "version", args); err != nil {
		return err
	}
	version, commit := Version, ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v := bi.Main.Version; v != "" && v != "(devel)" && version == "dev" {
			version = v // go install …@v1.2.3
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = " commit " + s.Value
			case "vcs.modified":
				if s.Value == "true" && commit != "" {
					commit += " (modified)"
				}
			}
		}
	}
	fmt.Fprintf(m.Stdout, "tracebridge %s%s %s %s/%s\n", version, commit, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return nil
}

// durationFlag is a flag in the configuration's duration syntax (Go's,
// plus whole days and weeks: "7d", "2w").
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	d := def
	fs.Func(name, usage+fmt.Sprintf(" (default %s)", def), func(s string) error {
		v, err := config.ParseDuration(s)
		if err != nil {
			return err
		}
		d = v
		return nil
	})
	return &d
}

// printFlags prints a subcommand's flags as they are typed (--name VALUE):
// its own first, with their usage; then the two every subcommand takes;
// then the cluster flags by name only (docs/cluster.md explains them), so
// they do not bury the subcommand's own.
func printFlags(w io.Writer, fs *flag.FlagSet) {
	var own, common, cluster []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		switch {
		case f.Name == "data" || f.Name == "log-level":
			common = append(common, f)
		case strings.HasPrefix(f.Name, "nats-"):
			cluster = append(cluster, f)
		default:
			own = append(own, f)
		}
	})
	one := func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if len(f.Name) == 1 {
			name = "-" + f.Name
		}
		if kind != "" {
			name += " " + kind
		}
		fmt.Fprintf(w, "  %s\n    \t%s", name, strings.ReplaceAll(usage, "\n", "\n    \t"))
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "[]" {
			fmt.Fprintf(w, " (default %q)", f.DefValue)
		}
		fmt.Fprintln(w)
	}
	for _, f := range own {
		one(f)
	}
	if len(common) > 0 {
		fmt.Fprintln(w, "\nFlags of every subcommand:")
		for _, f := range common {
			one(f)
		}
	}
	if len(cluster) > 0 {
		var names []string
		for _, f := range cluster {
			kind, _ := flag.UnquoteUsage(f)
			names = append(names, "--"+f.Name+" "+kind)
		}
		fmt.Fprintln(w, "\nCluster flags (a NATS JetStream cluster as the log: docs/cluster.md; $TRACEBRIDGE_NATS_* and [cluster] set them too):")
		line := " "
		for i, n := range names {
			if i > 0 {
				line += ","
			}
			if len(line)+len(n) > 100 {
				fmt.Fprintln(w, line)
				line = " "
			}
			line += " " + n
		}
		fmt.Fprintln(w, line)
	}
}
