package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/confine"
	"github.com/tracebridge/tracebridge/projections"
)

const configHelp = `config check [FILE | --config FILE]

Validates tracebridge.toml (FILE, else --config's default: $TRACEBRIDGE_CONFIG,
else tracebridge.toml in the user config dir) and explains each problem with its
line, and refuses capabilities and tool ids that do not exist. Exit 0 when valid
(or when no file exists: the defaults apply), 1 otherwise; secrets that cannot
be resolved in this environment are warned about.

The file:

  [approval]
  mode = "prompt"        # deny | allow | prompt (an operator decides); default prompt
  timeout = "2m"         # prompt: no decision in time is a denial
  # deciders = ["approvers"]   # [auth] groups whose members may approve
  # four_eyes = "destructive"  # off | destructive | all: not the caller
  # decider_members = ["desk"] # cluster members whose decisions count for all

  [auth]                 # mcp --http as an OAuth 2.1 resource server; the UI's sign-in
  issuer = "https://idp.example.com"   # exactly its tokens' iss
  # resource = "http://127.0.0.1:8765/mcp"   # the tokens' audience (default: the front door's URL)
  # scopes = ["mcp"]     # every token must grant these
  # groups_claim = "groups"
  # introspection_client_id = "tb"   # opaque tokens, RFC 7662, with
  # introspection_client_secret = "${secret:IDP}"
  # ui_client_id = "tracebridge-ui"  # the UI signs people in (PKCE)
  # ui_origin = "http://tracebridge.localhost:7077"

  [auth.roles]           # the UI's roles by group
  viewer = ["dev"]
  approver = ["approvers"]
  admin = ["platform"]

  [policy]
  grant = ["text.search", "trace.read", "workspace.read"]   # the default grants
  deny = ["some_tool", "github__delete_*"]   # tool ids (or patterns) always denied
  read_only_without_log = true   # may read-only tools run when the log cannot be written?

  [tools.regex_text_search]
  approval = "always"    # always | never: override the tool's requirement
  timeout = "30s"
  # secrets = ["GITHUB"] # secret references the tool receives (a discovered
  #                      # tool that calls an API, typically)

  [secrets.GITHUB]
  env = "GITHUB_TOKEN"   # or: file = "/run/secrets/github"

  [discovery]
  dirs = ["~/.config/tracebridge/tools"]   # *.tool.json manifests; off when empty

  [pipe]
  timeout = "5s"         # one call to the workspace host

  [servers.github]       # an upstream MCP server behind the executor: its tools
                         # are served as github__<tool>
  command = "npx"        # a stdio server: command, args, cwd, env
  args = ["-y", "@modelcontextprotocol/server-github"]
  env = { GITHUB_PERSONAL_ACCESS_TOKEN = "${secret:GITHUB}" }   # secret references
  # inherit_env = ["HTTPS_PROXY"]   # more of the bridge's environment than the
                         # base (PATH, HOME, USER, LANG, TMPDIR…); nothing else
                         # is inherited, never another server's secret
  # url = "https://host/mcp"   # or a Streamable HTTP server: url, headers
  # headers = { Authorization = "Bearer ${secret:GITHUB}" }
  # transport = "sse"    # the older HTTP+SSE transport
  # oauth = { scopes = ["repo"] }   # a url server with OAuth 2.1: run
                         # "tracebridge servers login github" once; also
                         # client_id, client_secret = "${secret:NAME}",
                         # client_metadata_url, redirect_port, per_user
                         # (each [auth] user's own: servers login --user)
  start = "lazy"         # lazy (started on first use; a tools/list lists pinned
                         # tools without starting it) | eager (at start)
  # sessions = "per-client"   # one connection per client session (its
                         # capabilities, roots, log level, subscriptions) |
                         # "shared": one for all
  # prefix = false       # serve its tools and prompts under their own names
  timeout = "30s"        # one request to the server
  allow = ["*"]          # tool-name patterns exposed (default all) ...
  deny = ["delete_*"]    # ... minus these
  read_only = ["search_*"]   # read-only whatever the annotations say (tools
                         # without readOnlyHint are side-effecting: approval)
  approval = { "create_*" = "always", "get_*" = "never" }
  # capability = "upstream.github"   # what its calls need (the default, granted
                                     # by configuring the server; another name
                                     # must be in policy.grant, a built-in one
                                     # is refused)

  [otlp]                 # runs as OpenTelemetry traces, sent by the process holding the hub
  endpoint = "http://127.0.0.1:4318"   # OTLP/HTTP; grpc: host:port
  protocol = "http/protobuf"           # or grpc
  # headers = { Authorization = "Bearer ${secret:OTLP}" }
  # insecure = true      # plain-text gRPC
  # resource = { "deployment.environment" = "dev" }
  # content = false      # true: also the redacted arguments and results
  # logs = false         # true: also the audit envelopes as OTLP log records

  [cluster]              # a NATS JetStream cluster as the replicated log (docs/cluster.md);
  url = "nats://nats1:4222,nats://nats2:4222"   # flags --nats-* and $TRACEBRIDGE_NATS_* override
  # creds = "/etc/tracebridge/alice.creds"      # or nkey = FILE; ca, cert, key for TLS
  # user = "alice"       # origin: events go to tb.log.<user>.<machine>
  # stream = "TRACEBRIDGE"

  [retention]            # the process holding the hub archives older events on a schedule
  keep = "90d"           # how long events stay in the hot log
  # dir = "/backups/tracebridge"   # the archive (default: archive/ in the data dir)
  # every = "1h"

Capabilities: text.search, trace.read, workspace.read, workspace.propose, workspace.write, process.run
(discovered tools always need process.run), upstream.NAME per configured server.`

func runConfig(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("config")
	cfgFlag := fs.String("config", "", "the `FILE` to check (the same as naming it, as `mcp --config`)")
	if err := m.parse(fs, configHelp, args); err != nil {
		return err
	}
	if fs.NArg() == 0 || fs.Arg(0) != "check" || fs.NArg() > 2 || fs.NArg() == 2 && *cfgFlag != "" {
		return usageError{"want: config check [FILE | --config FILE]"}
	}
	path := fs.Arg(1)
	if path == "" {
		path = *cfgFlag
	}
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
	if errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(m.Stdout, "tracebridge config check: there is no file %s: name the file you meant (`tracebridge config --help` shows one to start from)\n", path)
		return errFound
	}
	if err != nil {
		fmt.Fprintln(m.Stdout, err)
		return errFound
	}
	// What the file names must exist: capabilities, and tool ids (the
	// built-in ones and those its discovery dirs hold).
	served := bridge.Served(c, m.Getenv("HOME"), testTools()...)
	m.pinnedSchemas(ctx, served.Schemas) // the rules are checked against upstream tools' schemas the log has seen
	if problems := c.Unknown(path, served); len(problems) > 0 {
		fmt.Fprintln(m.Stdout, strings.Join(problems, "\n"))
		return errFound
	}
	fmt.Fprintf(m.Stdout, "ok: %s (approval %s, %d tool overrides, %d secrets, %d discovery dirs, %d upstream servers)\n",
		path, c.Approval.Mode, len(c.Tools), len(c.Secrets), len(c.Discovery.Dirs), len(c.Servers))
	for _, w := range append(c.Warnings(), sandboxWarnings(c, confine.ABI())...) {
		fmt.Fprintln(m.Stdout, "warning: "+w)
	}
	if c.OTLP.Endpoint != "" {
		fmt.Fprintln(m.Stdout, "note: [otlp] is read when the hub's process starts: after adding or changing it, restart that process (the bridge or `tracebridge serve` holding the hub)")
	}
	authNotes(ctx, m.Stdout, c.Auth)
	// Secrets that cannot be resolved in this environment: not an error
	// (the bridge's may differ), but the calls that need them would fail.
	_, why := executor.CheckSecrets(c.Secrets, m.Getenv, os.ReadFile)
	for _, name := range sortedKeys(why) {
		reason := strings.TrimPrefix(why[name].Error(), fmt.Sprintf("secret %q: ", name))
		fmt.Fprintf(m.Stdout, "warning: secret %s cannot be resolved here (%s): calls of the tools that use it fail with SecretUnresolved until it can\n", name, reason)
	}
	return nil
}

// authNotes says whether [auth]'s issuer answers from here (its metadata
// read, its keys' URL named) and what to register at it for the UI: a
// front door whose issuer cannot be reached refuses every access token
// with IssuerUnreachable.
func authNotes(ctx context.Context, w io.Writer, a config.Auth) {
	if !a.On() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	e, err := identity.NewVerifier(identity.Config{Issuer: a.Issuer, JWKSURL: a.JWKSURL}).Endpoints(ctx)
	switch {
	case err != nil:
		fmt.Fprintf(w, "warning: [auth] issuer %s cannot be read from here (%v): the front door refuses access tokens with IssuerUnreachable until it can\n", a.Issuer, err)
	case e.JWKS == "" && a.JWKSURL == "":
		fmt.Fprintf(w, "warning: [auth] issuer %s names no jwks_uri: set [auth] jwks_url, or only opaque tokens (introspection) can be checked\n", a.Issuer)
	default:
		fmt.Fprintf(w, "auth: issuer %s answers (keys %s)\n", a.Issuer, cmp.Or(a.JWKSURL, e.JWKS))
	}
	if a.IntrospectionClientID != "" && err == nil && e.Introspection == "" {
		fmt.Fprintf(w, "warning: [auth] issuer %s names no introspection_endpoint: opaque tokens will be refused\n", a.Issuer)
	}
	if a.UIClientID != "" {
		fmt.Fprintf(w, "auth: the UI signs in as client %s: register the redirect URI %s/auth/callback for it at the issuer\n", a.UIClientID, a.Origin())
	}
}

// sandboxWarnings says which command servers would run unconfined: those
// with sandbox = "off", and every one where Landlock is missing (abi 0).
func sandboxWarnings(c *config.Config, abi int) []string {
	var off, confined []string
	for _, name := range sortedKeys(c.Servers) {
		switch s := c.Servers[name]; {
		case s.Command == "":
		case s.Confined():
			confined = append(confined, name)
		default:
			off = append(off, name)
		}
	}
	var out []string
	if len(off) > 0 {
		out = append(out, fmt.Sprintf("servers %s run with sandbox = \"off\": your whole filesystem and network, as you (each start records it)", strings.Join(off, ", ")))
	}
	if len(confined) > 0 && abi == 0 {
		out = append(out, fmt.Sprintf("Landlock is not available on this system (an old kernel, Landlock not enabled at boot, or not Linux): servers %s would run unconfined, recorded as sandbox = \"unavailable\" on each start", strings.Join(confined, ", ")))
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// pinnedSchemas adds the input schemas of the upstream tools the data
// dir's log pins, when there is a log to read.
func (m *Main) pinnedSchemas(ctx context.Context, into map[string]json.RawMessage) {
	node, err := m.openLog(ctx, "config") // no log yet: nothing pinned
	if err != nil {
		return
	}
	defer node.Close()
	pins, err := projections.Read[projections.Pin](ctx, node, projections.Query{View: projections.ViewPins, Limit: 1 << 20})
	if err != nil {
		return
	}
	for _, p := range pins {
		if schema := p.InputSchema(); len(schema) > 0 {
			into[p.Name] = schema
		}
	}
}
