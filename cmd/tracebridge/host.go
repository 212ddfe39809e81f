package main

import (
	"context"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/pipe"
)

// pipePath is where the host listens: $TRACEBRIDGE_HOST, else run/host.sock
// in the data dir (on Windows, a named pipe named after the data dir).
func (m *Main) pipePath(dir hub.DataDir) string {
	if p := m.Getenv("TRACEBRIDGE_HOST"); p != "" {
		return p
	}
	return dir.PipePath()
}

// defaultPipePath is the host's pipe for a data dir.

func runHost(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("host")
	root := fs.String("root", "", "the workspace `DIR` every file operation is confined to (required)")
	diag := fs.String("diagnostics", "", "the `COMMAND` get_diagnostics runs in the root, split on spaces, no shell (e.g. \"go vet ./...\")")
	refresh := fs.Duration("diagnostics-refresh", 30*time.Second, "reuse a diagnostics result younger than this")
	cfgPath := fs.String("config", "", "tracebridge.toml `FILE`: its [lsp] language servers, and the [otlp] and [retention] this process runs while it holds the hub (default $TRACEBRIDGE_CONFIG, else the user config dir's)")
	ts := tsserverFlag(fs)
	if err := m.parse(fs, "host --root DIR [--diagnostics COMMAND] [--diagnostics-refresh AGE] [--tsserver-path FILE] [--config FILE] [--data DIR]\n\nRuns the workspace host: it serves the workspace tools (active document,\nselection, projects, proposals, reviews) to bridges over a local socket\n($TRACEBRIDGE_HOST, else run/host.sock in the data dir, or run/host-<hash>.sock\nwhen another root's host has that), confines every path to --root, and applies\na proposed edit only after an operator approves it (`tracebridge proposals`).\nSeveral roots can have a host each on one data dir: a bridge goes to the one\nholding its client's roots (or its working directory, or $TRACEBRIDGE_HOST);\noperator commands to the one holding the working directory. Runs until\ninterrupted.", args); err != nil {
		return err
	}
	if *root == "" {
		return usageError{"--root is required: the workspace directory"}
	}
	return m.serveHost(ctx, hostRun{root: *root, name: "host", diag: diagRunner(*diag, *refresh), ui: "off", cfgPath: *cfgPath, tsserver: *ts})
}

// tsserverFlag is --tsserver-path of host and up.
func tsserverFlag(fs *flag.FlagSet) *string {
	return fs.String("tsserver-path", "", "the tsserver.js `FILE` typescript-language-server runs (default: [lsp.typescript] tsserver, else the TypeScript installed beside the server; never the workspace's node_modules)")
}

func diagRunner(command string, refresh time.Duration) *host.DiagnosticsRunner {
	if strings.TrimSpace(command) == "" {
		return nil
	}
	return &host.DiagnosticsRunner{Command: strings.Fields(command), Refresh: refresh}
}

func runUp(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("up")
	root := fs.String("root", "", "the workspace `DIR` (required)")
	diag := fs.String("diagnostics", "", "the `COMMAND` get_diagnostics runs in the root (e.g. \"go vet ./...\")")
	refresh := fs.Duration("diagnostics-refresh", 30*time.Second, "reuse a diagnostics result younger than this")
	ui := uiFlag(fs)
	cfgPath := fs.String("config", "", "tracebridge.toml `FILE`: its [lsp] language servers, and the [otlp] and [retention] this process runs while it holds the hub (default $TRACEBRIDGE_CONFIG, else the user config dir's)")
	ts := tsserverFlag(fs)
	if err := m.parse(fs, "up --root DIR [--diagnostics COMMAND] [--diagnostics-refresh AGE] [--ui ADDR|off] [--tsserver-path FILE] [--config FILE] [--data DIR]\n\nThe one thing to run beside your editor: the hub of the data dir (unless one\nalready runs), the workspace host for DIR and the operator UI (its URL with\nthe launch token is printed to stderr; `tracebridge ui` prints it again), in\none process, until interrupted. AI clients then launch `tracebridge mcp` on\nthe same data dir.", args); err != nil {
		return err
	}
	if *root == "" {
		return usageError{"--root is required: the workspace directory"}
	}
	return m.serveHost(ctx, hostRun{root: *root, name: "up", diag: diagRunner(*diag, *refresh), ui: *ui, cfgPath: *cfgPath, tsserver: *ts})
}

// hostRun is what serveHost runs.
type hostRun struct {
	root, name string // the workspace; the process's role ("host", "up", "demo")
	diag       *host.DiagnosticsRunner
	ui         string // the UI's address, or "off"
	cfgPath    string // tracebridge.toml; "": the default
	tsserver   string // --tsserver-path
	// ready, if set, runs on its own goroutine once the host's pipe and the
	// UI listen, with the UI's URL.
	ready func(uiURL string)
}

// serveHost runs the workspace host for r.root (and, when this process
// wins the election, the hub and the duties of its configuration) and the
// UI until ctx ends.
func (m *Main) serveHost(ctx context.Context, r hostRun) error {
	root, name, diag, ui, cfgPath, ready := r.root, r.name, r.diag, r.ui, r.cfgPath, r.ready
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	ws, err := host.OpenWorkspace(root)
	if err != nil {
		return err
	}
	defer ws.Close()
	log := m.logger()
	node, em, closeEvidence, err := m.evidence(ctx, dir, name, log)
	if err != nil {
		return err
	}
	defer closeEvidence()
	state := dir.HostState(ws.Dir())
	props, err := host.OpenProposals(ws, em, filepath.Join(state, "proposals"), m.Now)
	if err != nil {
		return err
	}
	reviews, err := host.OpenReviews(ws, filepath.Join(state, "reviews"), m.Now)
	if err != nil {
		return err
	}
	cfg := m.dutyConfig(cfgPath, log)
	h := &host.Host{WS: ws, Proposals: props, Reviews: reviews, Diagnostics: diag, Rec: em, LanguageServers: languagesOf(cfg, r.tsserver)}
	defer h.Close() // its language servers, once the pipe stopped serving
	l, hostPath, unlist, err := m.listenHost(dir, ws.Dir())
	if err != nil {
		return err
	}
	defer l.Close()
	defer unlist()
	role := "attached to the running hub"
	if node.IsHub() {
		info, _ := node.Hub()
		role = "hub " + info.URL
	}
	url, serveUI, err := m.uiPart(ui, node, em, dir, hostPath, log)
	if err != nil {
		return err
	}
	// Everything this process runs, in the order it stops; the hub (when
	// this process is it) stops with closeEvidence, after the group.
	var g group
	g.addContext(ctx, "signals", untilInterrupted)
	g.addContext(ctx, "host", func(ctx context.Context) error {
		return pipe.NewServer(pipe.ServerOptions{Handlers: h.Handlers(), Recorder: em, Logger: log}).Serve(ctx, l)
	})
	if serveUI != nil {
		g.addContext(ctx, "ui", serveUI)
	}
	if ready != nil {
		g.addContext(ctx, "ready", func(ctx context.Context) error { ready(url); <-ctx.Done(); return nil })
	}
	if name != "demo" { // the demo's data dir is a scratch one: nothing of it is exported or archived
		m.addHubDuties(ctx, &g, cfg, dir, node, em, log)
	}
	fmt.Fprintf(m.Stderr, "tracebridge %s: workspace %s, pipe %s, %s. Ctrl-C stops it.\n", name, ws.Dir(), hostPath, role)
	return g.run()
}

// hostClient connects to the running host for operator commands (the one
// the working directory is in, the only one, or $TRACEBRIDGE_HOST), its
// calls recorded through this process's emitter; done closes it all.
func (m *Main) hostClient(ctx context.Context) (c host.Client, done func(), err error) {
	dir, err := m.dataDir()
	if err != nil {
		return c, nil, err
	}
	path, err := m.hostRouter(dir, pipe.ClientOptions{}, nil).Path()
	if err != nil {
		return c, nil, err
	}
	if _, err := os.Stat(path); err != nil && runtime.GOOS != "windows" { // no host: say so now, not after waiting for a hub
		return c, nil, &events.Err{Code: events.CodePipeUnavailable, Msg: pipe.Activation(path)}
	}
	node, err := m.open(ctx, hub.Read, "operator")
	if err != nil {
		return c, nil, err
	}
	em, err := m.emitter(dir, node, m.logger())
	if err != nil {
		node.Close()
		return c, nil, err
	}
	// As long as the UI's: an approval applied through an editor waits for
	// the editor (host.EditorCallTimeout) before it answers.
	pc := pipe.NewClient(pipe.ClientOptions{Path: path, Recorder: em, Logger: m.logger(), Timeout: 35 * time.Second})
	return host.Client{Host: pc, NewID: em.NewID}, func() { pc.Close(); em.Close(context.Background()); node.Close() }, nil
}

// languagesOf is the host's language servers: the defaults, each [lsp.NAME]
// of cfg replacing its language's or adding one; tsserver (when set) is the
// TypeScript's.
func languagesOf(cfg *config.Config, tsserver string) []host.Language {
	langs := slices.Clone(host.DefaultLanguages)
	var lsp map[string]config.LanguageServer
	if cfg != nil {
		lsp = cfg.LSP
	}
	for _, name := range slices.Sorted(maps.Keys(lsp)) {
		l := lsp[name]
		timeout, _ := config.ParseDuration(l.Timeout)
		i := slices.IndexFunc(langs, func(d host.Language) bool { return d.Name == name })
		if i < 0 {
			langs = append(langs, host.Language{Name: name, LanguageID: name})
			i = len(langs) - 1
		}
		langs[i].Command, langs[i].Timeout, langs[i].TSServer = l.Command, timeout, l.TSServer
		if len(l.Extensions) > 0 {
			langs[i].Extensions = l.Extensions
		}
	}
	for i := range langs {
		if tsserver != "" && langs[i].Name == "typescript" {
			langs[i].TSServer = tsserver
		}
	}
	return langs
}
