package bridge

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

// Host is the bridge's way to the workspace hosts: a host.Router or a
// pipe.Client. The bridge closes it.
type Host interface {
	tools.HostCaller
	Close()
}

// Parts is what a bridge is built from: `tracebridge mcp` and a session
// re-drive differ only in these.
type Parts struct {
	Config    *config.Config // nil with ConfigErr: every call is ConfigInvalid
	ConfigErr error
	// ConfigText is the configuration's text, recorded at session start.
	ConfigText string
	Emitter    *events.Emitter
	// Log is the event log the executor (approvals), the trace tools and
	// the gateway (pins) read: a hub.Node.
	Log  tools.TraceLog
	Host Host
	// Descriptors is where upstream descriptors are kept whole ("": not
	// kept); Tokens holds OAuth grants (nil: none).
	Descriptors string
	Tokens      upstream.TokenStore
	// ServerState holds each command server's own folders (its state and
	// tmp when confined).
	ServerState string
	// Env is the process environment: what upstream children inherit and
	// where ~ in discovery dirs points.
	Env func(string) string
	// Getenv and ReadFile resolve secrets (a re-drive answers from the
	// recording); nil: the process's own.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	// After waits for approval deadlines; nil: time.After.
	After   func(time.Duration) <-chan time.Time
	Now     func() time.Time
	Logger  *slog.Logger
	Version string
	// Dial connects the gateway's upstreams (a re-drive: the recording);
	// nil: they are started or dialed as configured.
	Dial func(ctx context.Context, server string) (sdk.Transport, error)
	// Extra tools join the catalog (a re-drive's recorded stand-ins, a
	// test build's misbehaving tools).
	Extra []*executor.Tool
}

// Bridge is one MCP server over the executor over the catalog.
type Bridge struct {
	Server   *bmcp.Server
	Executor *executor.Executor
	gateway  *upstream.Gateway
	host     Host
}

// New wires a bridge: the catalog, the executor over it, the gateway to
// the configured upstream servers (started), and the MCP server over the
// executor. Close releases the gateway and the host client.
func New(p Parts) (*Bridge, error) {
	if p.Env == nil {
		p.Env = func(string) string { return "" }
	}
	catalog, err := Catalog(p.Config, p.Emitter, p.Host, p.Log, p.Env("HOME"), p.Extra...)
	if err != nil {
		p.Host.Close()
		return nil, err
	}
	b := &Bridge{host: p.Host}
	b.Executor = executor.New(executor.Options{Catalog: catalog, Emitter: p.Emitter, Log: p.Log, Config: p.Config, ConfigErr: p.ConfigErr,
		Getenv: p.Getenv, ReadFile: p.ReadFile, After: p.After, Now: p.Now, Logger: p.Logger})
	own := traceResources(p.Log)
	opts := bmcp.Options{Executor: b.Executor, Emitter: p.Emitter, Version: p.Version, Now: p.Now, Logger: p.Logger, Resources: own, Config: p.ConfigText}
	// The gateway: every [servers.NAME] behind the executor. Its tools
	// join the catalog when a server is first listed (a client's
	// tools/list, a call, or start = "eager").
	if p.Config != nil && len(p.Config.Servers) > 0 {
		b.gateway = upstream.New(upstream.Options{Config: p.Config, Emitter: p.Emitter, Pins: p.Log, Catalog: catalog, Secrets: b.Executor.ResolveSecrets,
			Changed: func() {
				if b.Server != nil {
					b.Server.SyncTools()
				}
			},
			Guard: b.Executor,
			Dial:  p.Dial, OneAtATime: p.Dial != nil, Getenv: p.Env, Descriptors: p.Descriptors, StateDir: p.ServerState, Reserved: schemes(own), Authorize: b.Executor.Authorize,
			Version: p.Version, Now: p.Now, Logger: p.Logger, Tokens: p.Tokens})
		opts.BeforeList = b.gateway.Ensure
		opts.BeforeCall = b.gateway.EnsureTool
		opts.Passthrough = b.gateway
	}
	b.Server = bmcp.New(opts)
	if b.gateway != nil {
		b.gateway.Start(context.Background())
	}
	return b, nil
}

// Close stops the upstreams and closes the host client.
func (b *Bridge) Close() {
	if b.gateway != nil {
		b.gateway.Close()
	}
	b.host.Close()
}

// schemes are the URI schemes of the bridge's own resources: its alone, so
// no upstream resource or template in them is served.
func schemes(own []bmcp.Resource) []string {
	var reserved []string
	for _, r := range own {
		if scheme, _, ok := strings.Cut(r.URITemplate, "://"); ok && !slices.Contains(reserved, scheme+"://") {
			reserved = append(reserved, scheme+"://")
		}
	}
	return reserved
}

// Catalog is every tool a bridge serves: the built-in ones (the workspace
// tools forwarded to the host over the pipe, the trace tools reading log),
// extra, and the discovered ones when cfg names discovery dirs (~ is home).
func Catalog(cfg *config.Config, em *events.Emitter, host tools.HostCaller, log tools.TraceLog, home string, extra ...*executor.Tool) (*executor.Catalog, error) {
	all := append([]*executor.Tool{tools.Regex(), tools.BM25(em.Redactor().Covers)}, tools.Workspace(host)...)
	all = append(all, extra...)
	all = append(all, tools.Trace(log)...)
	if cfg != nil && len(cfg.Discovery.Dirs) > 0 {
		found, findings := tools.Discover(expandHome(cfg.Discovery.Dirs, home))
		for _, f := range findings {
			em.Emit(f.Event())
		}
		all = append(all, found...)
	}
	return executor.NewCatalog(all...)
}

func expandHome(dirs []string, home string) []string {
	out := make([]string, len(dirs))
	for i, d := range dirs {
		if home != "" && (d == "~" || strings.HasPrefix(d, "~/")) {
			d = filepath.Join(home, d[1:])
		}
		out[i] = d
	}
	return out
}

// traceResources are the bridge's own resources: a recorded run by its
// request id.
func traceResources(log tools.TraceLog) []bmcp.Resource {
	return []bmcp.Resource{{URITemplate: "trace://runs/{requestId}", Name: "run", MIMEType: "application/json", Capability: config.CapTraceRead,
		Description: "One recorded run: its events in order, status and verdict (the first boundary that failed, its code and the operator action).",
		Read:        func(ctx context.Context, id string) (string, error) { return tools.RunResource(ctx, log, id) }}}
}

// Served is what a bridge with cfg serves, for `config check`: the ids of
// its tools (built-in, extra and discovered, ~ being home) and the
// capabilities they and the configured servers need.
func Served(cfg *config.Config, home string, extra ...*executor.Tool) config.Served {
	s := config.Served{Tools: map[string]bool{}, Capabilities: map[string]bool{}, Schemas: map[string]json.RawMessage{}}
	for _, c := range []string{config.CapTextSearch, config.CapTraceRead, config.CapWorkspaceRead, config.CapWorkspacePropose, config.CapWorkspaceWrite, config.CapProcessRun} {
		s.Capabilities[c] = true
	}
	all := append([]*executor.Tool{tools.Regex(), tools.BM25(nil)}, tools.Workspace(nil)...)
	all = append(append(all, tools.Trace(nil)...), extra...)
	if len(cfg.Discovery.Dirs) > 0 {
		found, _ := tools.Discover(expandHome(cfg.Discovery.Dirs, home))
		all = append(all, found...)
	}
	for name, sv := range cfg.Servers {
		s.Capabilities[sv.CapabilityOf(name)] = true
	}
	for _, t := range all {
		s.Tools[t.ID] = true
		if raw := t.RawSchema; raw != nil {
			s.Schemas[t.ID] = raw
		} else if raw, err := json.Marshal(t.InputSchema); err == nil && t.InputSchema != nil {
			s.Schemas[t.ID] = raw
		}
		for _, c := range t.Capabilities {
			s.Capabilities[c] = true
		}
	}
	return s
}
