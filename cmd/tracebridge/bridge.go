package main

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/host"
	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/bridge/pipe"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// bridgeParts is what a bridge is built from: `tracebridge mcp` and a
// session re-drive differ only in these.
type bridgeParts struct {
	Config    *config.Config // nil with ConfigErr: every call is ConfigInvalid
	ConfigErr error
	Emitter   *events.Emitter
	Node      *hub.Node
	PipePath  string
	// Dir, when set, routes workspace calls among the data dir's hosts
	// (several roots) instead of only PipePath.
	Dir hub.DataDir
	// Hosts, when set, are the hosts to route among instead of the data
	// dir's (a re-drive's recorded hosts).
	Hosts []host.Entry
	// Getenv and ReadFile resolve secrets (a re-drive answers from the
	// recording); nil: the process's own.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	// After waits for approval deadlines; nil: time.After.
	After   func(time.Duration) <-chan time.Time
	Now     func() time.Time
	Logger  *slog.Logger
	Version string
	// ConfigText is the configuration's text, recorded at session start.
	ConfigText string
	// Dial connects the gateway's upstreams (a re-drive: the recording);
	// nil: they are started or dialed as configured.
	Dial func(ctx context.Context, server string) (sdk.Transport, error)
	// Extra tools join the catalog (a re-drive's recorded stand-ins).
	Extra []*executor.Tool
}

// closer adapts a pipe.Client (whose Close returns an error) to the
// bridge's host client.
type closer struct{ *pipe.Client }

func (c closer) Close() { c.Client.Close() }

// newBridge is the one way a bridge is wired: the catalog, the executor
// over it, and the MCP server over the executor, with the host client
// they call. The returned func closes the host client.
func (m *Main) newBridge(p bridgeParts) (*bmcp.Server, *executor.Executor, func(), error) {
	timeout := 5 * time.Second
	if p.Config != nil {
		timeout = p.Config.PipeTimeout()
	}
	copts := pipe.ClientOptions{Path: p.PipePath, Recorder: p.Emitter, Timeout: timeout, Logger: p.Logger}
	var hostClient interface {
		tools.HostCaller
		Close()
	}
	switch {
	case len(p.Hosts) > 0 || p.Dir != "":
		hostClient = m.hostRouter(p.Dir, copts, p.Hosts)
	default:
		hostClient = closer{pipe.NewClient(copts)}
	}
	catalog, err := m.catalog(p.Config, p.Emitter, hostClient, p.Node, p.Extra...)
	if err != nil {
		hostClient.Close()
		return nil, nil, nil, err
	}
	x := executor.New(executor.Options{Catalog: catalog, Emitter: p.Emitter, Log: p.Node, Config: p.Config, ConfigErr: p.ConfigErr,
		Getenv: p.Getenv, ReadFile: p.ReadFile, After: p.After, Now: p.Now, Logger: p.Logger})
	// The gateway: every [servers.NAME] behind the executor. Its tools
	// join the catalog when a server is first listed (a client's
	// tools/list, a call, or start = "eager").
	var srv *bmcp.Server
	var gw *upstream.Gateway
	own := traceResources(p.Node)
	opts := bmcp.Options{Executor: x, Emitter: p.Emitter, Version: p.Version, Now: p.Now, Logger: p.Logger, Resources: own, Config: p.ConfigText}
	// The bridge's own URI schemes are its alone: no upstream resource or
	// template in them is served.
	var reserved []string
	for _, r := range own {
		if scheme, _, ok := strings.Cut(r.URITemplate, "://"); ok && !slices.Contains(reserved, scheme+"://") {
			reserved = append(reserved, scheme+"://")
		}
	}
	if p.Config != nil && len(p.Config.Servers) > 0 {
		gw = upstream.New(upstream.Options{Config: p.Config, Emitter: p.Emitter, Pins: p.Node, Catalog: catalog, Secrets: x.ResolveSecrets,
			Changed: func() {
				if srv != nil {
					srv.SyncTools()
				}
			},
			Dial: p.Dial, OneAtATime: p.Dial != nil, Getenv: m.Getenv, Descriptors: descriptorsOf(p.Dir), Reserved: reserved, Authorize: x.Authorize, Version: p.Version, Now: p.Now, Logger: p.Logger,
			Tokens: grantsOf(p.Dir, p.Logger)})
		opts.BeforeList = gw.Ensure
		opts.Passthrough = gw
	}
	srv = bmcp.New(opts)
	closeAll := func() { hostClient.Close() }
	if gw != nil {
		gw.Start(context.Background())
		closeAll = func() { gw.Close(); hostClient.Close() }
	}
	return srv, x, closeAll, nil
}

// grantsOf is dir's store of OAuth grants (nil for none: a re-drive, or a
// key that cannot be read, which the log says).
func grantsOf(dir hub.DataDir, log *slog.Logger) upstream.TokenStore {
	if dir == "" {
		return nil
	}
	s, err := openGrantStore(dir)
	if err != nil {
		log.Warn("OAuth grants unavailable: OAuth servers answer UpstreamUnauthorized", "err", err)
		return nil
	}
	return s
}

// descriptorsOf is where dir keeps descriptors whole ("" for none).
func descriptorsOf(dir hub.DataDir) string {
	if dir == "" {
		return ""
	}
	return dir.Descriptors()
}
