package main

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/bridge/executor"
	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/loopback"
	"github.com/tracebridge/tracebridge/pipe"
)

func runMCP(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("mcp")
	cfgPath := fs.String("config", "", "tracebridge.toml `FILE` (default $TRACEBRIDGE_CONFIG, else tracebridge.toml in the user config dir; none: safe defaults)")
	httpAddr := fs.String("http", "", "serve MCP over Streamable HTTP at `ADDR` (127.0.0.1:PORT; loopback only, bearer token from `tracebridge token`) instead of stdio")
	idle := fs.Duration("session-idle", defaultSessionIdle, "with --http: end a session no request used for `DURATION` and stop the servers it started (its client gets 404 and initializes again)")
	if err := m.parse(fs, "mcp [--config FILE] [--http ADDR [--session-idle DURATION]] [--data DIR]\n\nServes MCP on stdin/stdout for an AI client (Claude Desktop, Claude Code, Cursor,\nVS Code). Every request, policy decision, secret resolution, approval and tool\nrun is recorded in the data dir's event log; each tool result names its request\nid in _meta[\"tracebridge/requestId\"]. stdout carries only protocol frames; logs\ngo to stderr and to logs/mcp-<pid>.log in the data dir.\n\nWith --http 127.0.0.1:PORT it serves the same bridge at http://127.0.0.1:PORT/mcp\nfor clients that connect by URL: every request needs the header\n\"Authorization: Bearer <token>\" (`tracebridge token` prints it), a loopback Host\nwith this port and, when sent, this Origin.", args); err != nil {
		return err
	}
	if *httpAddr != "" {
		if err := checkHTTPAddr(*httpAddr); err != nil {
			return err
		}
	}
	tuneGC()
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if err := dir.Ensure(); err != nil {
		return err
	}
	// Protocol frames go to a duplicate of fd 1; fd 1 itself now points at
	// stderr, so a stray print (ours, a library's, a child's) cannot
	// corrupt the session.
	protoOut, err := protectStdout()
	if err != nil {
		return fmt.Errorf("protect stdout: %w", err)
	}
	logger, closeLog := m.fileLogger(dir)
	defer closeLog()

	cfg, cfgErr := m.loadConfigHinted(*cfgPath)
	if cfgErr != nil {
		logger.Error("configuration is broken: every tool call will be denied (ConfigInvalid) until it is fixed", "err", cfgErr)
	}
	node, em, closeEvidence, err := m.evidence(ctx, dir, "mcp", logger)
	if err != nil {
		return err
	}
	defer closeEvidence()

	cfgText, _ := m.configText(*cfgPath)
	b, err := bridge.New(bridge.Parts{Config: cfg, ConfigErr: cfgErr, ConfigText: cfgText, Emitter: em, Log: node,
		Host:        m.hostRouter(dir, pipe.ClientOptions{Recorder: em, Timeout: pipeTimeout(cfg), Logger: logger}, nil),
		Descriptors: dir.Descriptors(), ServerState: dir.Servers(), Tokens: grantsOf(dir, logger), Env: m.Getenv, Getenv: m.Getenv, Now: m.Now, Logger: logger,
		Version: Version, Extra: testTools()})
	if err != nil {
		return err
	}
	defer b.Close()
	srv, x := b.Server, b.Executor
	logger.Info("tracebridge mcp serving", "data", string(dir), "tools", len(x.Catalog().Tools()), "hub", node.IsHub())
	// Everything the bridge runs: the MCP session until stdin closes, and
	// Ctrl-C; the evidence (and the hub, when this process is it) closes
	// after the group, so every answered request's events are durable.
	var g group
	g.addContext(ctx, "signals", untilInterrupted)
	g.addContext(ctx, "config", func(ctx context.Context) error {
		m.watchConfig(ctx, *cfgPath, x, em, logger)
		return nil
	})
	if cfgErr == nil {
		m.addHubDuties(ctx, &g, cfg, dir, node, em, logger)
	}
	if *httpAddr != "" {
		if err := m.addMCPHTTP(ctx, &g, dir, *httpAddr, *idle, cfg, srv, em, logger); err != nil {
			return err
		}
		return g.run()
	}
	g.addContext(ctx, "mcp", func(ctx context.Context) error {
		err := srv.Serve(ctx, readCloser(m.Stdin), protoOut)
		if errors.Is(err, context.Canceled) || errors.Is(err, io.EOF) {
			return nil
		}
		return err
	})
	return g.run()
}

// defaultSessionIdle is how long an HTTP session may go unused before it
// ends: each session owns its servers' processes (unless a server is
// shared), and a client that never sends DELETE would keep them for ever
// (issue 46 F2: ~400 MB after 23 minutes of one client reconnecting).
const defaultSessionIdle = 10 * time.Minute

// addMCPHTTP adds the bridge served over Streamable HTTP at addr (loopback,
// bearer token) to g, in place of stdio.
func (m *Main) addMCPHTTP(ctx context.Context, g *group, dir hub.DataDir, addr string, idle time.Duration, cfg *config.Config, srv *bmcp.Server, em *events.Emitter, logger *slog.Logger) error {
	auth := cfg.Auth
	l, token, err := m.httpListener(dir, addr)
	if err != nil {
		return err
	}
	port := l.Addr().(*net.TCPAddr).Port
	// Refusals, the front door's and the listener's, are counted in
	// one place. Another user's connection is closed before a byte of
	// it is read: a token that user captured (a squatted port) gets
	// nothing. An idle connection is closed within seconds.
	refusals := loopback.NewRefusals(events.KindMCPHTTPRejected, m.Now, em.Emit)
	g.addContext(ctx, "refusals", func(ctx context.Context) error { refusals.Run(ctx); return nil })
	if auth.On() {
		// Access tokens are for other people too (a reverse proxy in front
		// may run as another user): every connection is let in, and one
		// from another user may not use the data dir's token.
		l = loopback.Marked(l)
	} else {
		l = loopback.SameUser(l, refusals.ForeignPeer, func() {
			logger.Warn("this system cannot tell which user a loopback connection comes from: the bearer token is the only check")
		})
	}
	oauth, err := m.resourceServer(cfg, port, em.Redactor())
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv.HTTPHandler(ctx, bmcp.HTTPOptions{Token: token, Port: port, Refusals: refusals, IdleTimeout: idle, OAuth: oauth}),
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 15 * time.Second, ConnContext: bmcp.ConnContext}
	if oauth != nil {
		fmt.Fprintf(m.Stderr, "tracebridge: access tokens of %s for %s accepted\n", oauth.Issuer, oauth.Resource)
	}
	logger.Info("serving MCP over HTTP", "url", fmt.Sprintf("http://127.0.0.1:%d/mcp", port), "token", "`tracebridge token` prints it")
	fmt.Fprintf(m.Stderr, "tracebridge: MCP at http://127.0.0.1:%d/mcp (Authorization: Bearer $(tracebridge token))\n", port)
	g.add("http", func() error {
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}, func(error) {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(sctx)
	})
	return nil
}

// resourceServer is the front door's [auth] (nil when off): tokens of the
// issuer, for the resource (http://127.0.0.1:PORT/mcp unless named).
func (m *Main) resourceServer(cfg *config.Config, port int, red *events.Redactor) (*bmcp.OAuth, error) {
	auth := cfg.Auth
	if !auth.On() {
		return nil, nil
	}
	resource := auth.Resource
	if resource == "" {
		resource = fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	}
	vc := identity.Config{Issuer: auth.Issuer, Audience: resource, Scopes: auth.Scopes, GroupsClaim: auth.GroupsClaim, JWKSURL: auth.JWKSURL}
	if auth.IntrospectionClientID != "" {
		refs := config.SecretRefs(auth.IntrospectionClientSecret)
		secrets, err := resolveSecrets(m, cfg, refs)
		if err != nil {
			return nil, fmt.Errorf("[auth] introspection_client_secret: %w", err)
		}
		vc.IntrospectionClientID = auth.IntrospectionClientID
		vc.IntrospectionSecret = config.ExpandSecrets(auth.IntrospectionClientSecret, func(n string) string { return secrets[n] })
		if vc.IntrospectionSecret != "" {
			red.Register(vc.IntrospectionSecret)
		}
	}
	return &bmcp.OAuth{Issuer: auth.Issuer, Resource: resource, Scopes: auth.Scopes, Verifier: identity.NewVerifier(vc)}, nil
}

// checkHTTPAddr refuses an --http address that is not loopback: before
// the bridge starts (or says it serves).
func checkHTTPAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageError{fmt.Sprintf("--http %q: want 127.0.0.1:PORT", addr)}
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usageError{fmt.Sprintf("--http %q: only a loopback address (127.0.0.1:PORT) is served; other machines must not reach the bridge", addr)}
	}
	return nil
}

// httpListener listens on addr, which must be a loopback address, and
// returns the bearer token clients must send (created 0600 on first use).
func (m *Main) httpListener(dir hub.DataDir, addr string) (net.Listener, string, error) {
	if err := checkHTTPAddr(addr); err != nil {
		return nil, "", err
	}
	token, err := mcpToken(dir)
	if err != nil {
		return nil, "", err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, "", fmt.Errorf("--http: %w", err)
	}
	return l, token, nil
}

// mcpToken is the data dir's bearer token for `mcp --http` (32 random
// bytes in keys/mcp-http.key, 0600, made on first use), as hex.
func mcpToken(dir hub.DataDir) (string, error) {
	key, err := events.LoadKeyFile(dir.HTTPKey(), 32)
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(key), nil
}

func runToken(_ context.Context, m *Main, args []string) error {
	fs := m.flags("token")
	if err := m.parse(fs, "token\n\nPrints the bearer token clients of `tracebridge mcp --http` send\n(\"Authorization: Bearer <token>\"). It is made on first use and kept 0600 in the data\ndir's keys/; delete keys/mcp-http.key to make a new one.", args); err != nil {
		return err
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if err := dir.Ensure(); err != nil {
		return err
	}
	tok, err := mcpToken(dir)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, tok)
	return nil
}

// loadConfigHinted is loadConfig with an error that names the file and the
// command that checks it.
func (m *Main) loadConfigHinted(flagPath string) (*config.Config, error) {
	cfg, err := m.loadConfig(flagPath)
	if err != nil {
		path, _ := m.configPath(flagPath)
		err = fmt.Errorf("%w (check it with `tracebridge config check --config %s`; the bridge reloads it when it changes)", err, path)
	}
	return cfg, err
}

// watchConfig puts a changed configuration file in force (checked every
// second) and records that it did, with the file's hash, until ctx ends.
func (m *Main) watchConfig(ctx context.Context, flagPath string, x *executor.Executor, em *events.Emitter, log *slog.Logger) {
	path, _ := m.configPath(flagPath)
	if path == "" {
		<-ctx.Done() // nothing to watch; a part ends only when the process does
		return
	}
	prev, _ := m.loadConfig(flagPath)
	config.Watch(ctx, path, time.Second, func() {
		cfg, err := m.loadConfigHinted(flagPath)
		x.Reload(cfg, err)
		b, _ := os.ReadFile(path)
		if err != nil {
			log.Error("the changed configuration is broken: every tool call is denied (ConfigInvalid) until it is fixed", "err", err)
		} else {
			log.Info("configuration reloaded", "path", path)
		}
		em.Emit(config.LoadedEvent(path, b, err))
		if err != nil {
			return // nothing loosened: everything is denied
		}
		// What the reload loosened, against what was last in force.
		if changes := config.Weakened(prev, cfg); len(changes) > 0 {
			log.Warn("the reloaded configuration is weaker than the last", "changes", strings.Join(changes, "; "))
			em.Emit(config.WeakenedEvent(path, changes))
		}
		prev = cfg
	})
}

// configPath is where the configuration comes from: --config, else
// $TRACEBRIDGE_CONFIG (named: a missing file is an error), else the user
// config dir's tracebridge.toml (a missing one means the defaults).
func (m *Main) configPath(flagPath string) (path string, named bool) {
	if flagPath != "" {
		return flagPath, true
	}
	if p := m.Getenv("TRACEBRIDGE_CONFIG"); p != "" {
		return p, true
	}
	return m.defaultConfigPath(), false
}

// loadConfig reads the configuration configPath names; no file at the
// default place means the defaults, a named file that is missing or broken
// is an error.
func (m *Main) loadConfig(flagPath string) (*config.Config, error) {
	path, named := m.configPath(flagPath)
	if path == "" {
		return config.Default(), nil
	}
	c, err := config.Load(path)
	if !named && errors.Is(err, os.ErrNotExist) {
		return config.Default(), nil
	}
	return c, err
}

func (m *Main) defaultConfigPath() string {
	if d := m.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "tracebridge", "tracebridge.toml")
	}
	if h := m.Getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "tracebridge", "tracebridge.toml")
	}
	return ""
}

// fileLogger logs to stderr and to logs/mcp-<pid>.log in the data dir.
func (m *Main) fileLogger(dir hub.DataDir) (*slog.Logger, func()) {
	base := m.logger()
	if err := os.MkdirAll(dir.LogDir(), 0o700); err != nil {
		return base, func() {}
	}
	f, err := os.OpenFile(filepath.Join(dir.LogDir(), fmt.Sprintf("mcp-%d.log", os.Getpid())), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		base.Warn("no log file", "err", err)
		return base, func() {}
	}
	l := slog.New(slog.NewTextHandler(io.MultiWriter(m.Stderr, f), &slog.HandlerOptions{Level: m.level()}))
	return l, func() { f.Close() }
}

type nopReadCloser struct{ io.Reader }

func (nopReadCloser) Close() error { return nil }

func readCloser(r io.Reader) io.ReadCloser {
	if rc, ok := r.(io.ReadCloser); ok {
		return rc
	}
	return nopReadCloser{r}
}

// evidence opens the data dir's log for a long-running process (electing
// itself hub when none runs) and an emitter that redacts with the data dir's
// key. The returned func flushes what is queued and closes both.
func (m *Main) evidence(ctx context.Context, dir hub.DataDir, name string, logger *slog.Logger) (*hub.Node, *events.Emitter, func(), error) {
	node, err := hub.Open(ctx, hub.Options{Dir: dir, Role: hub.Elect, Logger: logger, Now: m.Now, Name: name, Cluster: m.cluster()})
	if err != nil {
		return nil, nil, nil, err
	}
	em, err := m.emitter(dir, node, logger)
	if err != nil {
		node.Close()
		return nil, nil, nil, err
	}
	return node, em, func() {
		cctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := em.Close(cctx); err != nil {
			logger.Error("events lost at exit", "err", err)
		}
		node.Close()
	}, nil
}

// emitter is the one way a process builds its emitter: it redacts with the
// data dir's key (equal secrets get equal fingerprints in every process),
// every secret the data dir's other processes resolved (the sealed cache),
// and every secret of the default configuration this process can resolve
// itself — so a host, an operator command or the UI redacts a secret it
// never asked for.
func (m *Main) emitter(dir hub.DataDir, node events.Appender, logger *slog.Logger) (*events.Emitter, error) {
	red, err := events.LoadSharedRedactor(dir.RedactionKey(), dir.SecretCache())
	if err != nil {
		return nil, err
	}
	if cfg, err := m.loadConfig(""); err == nil {
		for _, v := range append(executor.ConfiguredSecrets(cfg.Secrets, m.Getenv, os.ReadFile), cfg.Credentials()...) {
			red.Register(v)
		}
	}
	opts := events.EmitterOptions{Redactor: red, Logger: logger, Now: m.Now}
	if ps, ok := node.(payloadKeeper); ok && ps.KeepsPayloads() {
		opts.Payloads = ps
	}
	return events.NewEmitter(node, opts), nil
}

// payloadKeeper is a log that keeps long values whole (hub.Node, unless it
// is on a cluster).
type payloadKeeper interface {
	events.PayloadStore
	KeepsPayloads() bool
}
