package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// Server is one upstream MCP server the gateway puts behind the executor:
// a stdio command (Command, Args, Cwd, Env) or a Streamable HTTP endpoint
// (URL, Headers). Values of Env and Headers may hold secret references,
// written ${secret:NAME} for a [secrets.NAME] table; they are resolved by
// the secret broker when the upstream starts and never appear in argv,
// events or logs.
type Server struct {
	Command string            `toml:"command"`
	Args    []string          `toml:"args"`
	Cwd     string            `toml:"cwd"`
	Env     map[string]string `toml:"env"`
	URL     string            `toml:"url"`
	Headers map[string]string `toml:"headers"`
	// Transport of a URL: "streamable" (default) or "sse" (the older
	// HTTP+SSE transport).
	Transport string `toml:"transport"`
	// Start is "lazy" (default: on the first tools/list or call) or
	// "eager" (when the bridge starts).
	Start string `toml:"start"`
	// Timeout bounds one request to the upstream. Default 30s.
	Timeout string `toml:"timeout"`
	// Allow and Deny are tool-name patterns (path.Match globs on the
	// upstream's own names): a tool is exposed when it matches Allow
	// (default: every tool) and no Deny pattern.
	Allow []string `toml:"allow"`
	Deny  []string `toml:"deny"`
	// Capability is what calls of the server's tools need. Default
	// "upstream.NAME", granted by configuring the server; another one is a
	// requirement that [policy] grant must list (it never grants anything
	// itself, and may not name a built-in capability).
	Capability string `toml:"capability"`
	// ReadOnly lists patterns of tools to treat as read-only whatever
	// their annotations say; every other tool whose annotations do not
	// say readOnlyHint: true is side-effecting.
	ReadOnly []string `toml:"read_only"`
	// Approval maps tool patterns to "always" or "never", overriding the
	// default (side-effecting tools: always; read-only: never). The first
	// matching pattern in sorted order wins.
	Approval map[string]string `toml:"approval"`
	// InheritEnv names variables of the bridge's environment a command
	// server receives beyond BaseEnv (say NODE_OPTIONS or HTTPS_PROXY).
	// Nothing else is inherited; secrets go in Env as references.
	InheritEnv []string `toml:"inherit_env"`
	// Prefix, when false, exposes the server's tools and prompts under
	// their own names instead of NAME__tool (for one server behind the
	// bridge; a name another tool already has is then not served).
	Prefix *bool `toml:"prefix"`
	// Guard maps rules of the guard's pack (policy.PackRules) to the
	// action they take for this server's tools, or "off".
	Guard map[string]string `toml:"guard"`
	// AllowPlaintext lets an http:// url reach a host other than this
	// machine (in clear, headers and tokens included): recorded when used.
	AllowPlaintext bool `toml:"allow_plaintext"`
	// Sandbox is "on" (the default for command servers where Landlock
	// exists) or "off": the server then runs with the user's whole
	// filesystem and network, which its start records.
	Sandbox string `toml:"sandbox"`
	// NetworkRaw is the confined server's TCP network: "any" (default),
	// "none", or a list of "host:port" it may connect to (see Network).
	NetworkRaw any `toml:"network"`
	// Roots are folders the confined server may change beyond its own
	// state and tmp (and the folders its args name); Read are folders or
	// files it may read beyond the system and its install.
	Roots []string `toml:"roots"`
	Read  []string `toml:"read"`
	// Sessions is "per-client" (default: each client session of the
	// bridge gets its own connection to the server, which declares that
	// client's capabilities and carries its roots, log level,
	// subscriptions, sampling and elicitation) or "shared" (one
	// connection for every client; what the server asks or tells goes to
	// the client whose call is in flight, else to none).
	Sessions string `toml:"sessions"`
	// OAuth, when set, authorizes the bridge to a url server with OAuth 2.1
	// (authorization code with PKCE): `tracebridge servers login NAME`
	// once, then tokens are kept sealed in the data dir and refreshed.
	OAuth *OAuth `toml:"oauth"`
}

// OAuth is a url server's authorization. Every field is optional: without
// a client id the bridge registers itself (a client ID metadata document
// when ClientMetadataURL is set, else dynamic client registration).
type OAuth struct {
	ClientID string `toml:"client_id"`
	// ClientSecret is a ${secret:NAME} reference (or empty: a public
	// client).
	ClientSecret      string   `toml:"client_secret"`
	ClientMetadataURL string   `toml:"client_metadata_url"`
	Scopes            []string `toml:"scopes"`
	// RedirectPort is the loopback port of `servers login`'s redirect
	// (http://127.0.0.1:PORT/callback). Zero: any free port (a
	// pre-registered client needs the one it registered).
	RedirectPort int `toml:"redirect_port"`
	// PerUser makes each user the front door authenticated ([auth]) call
	// the server with their own grant (`servers login NAME --user SUB`),
	// never another's; calls of no one in particular (stdio, the data
	// dir's token) use the server's own.
	PerUser bool `toml:"per_user"`
}

// Shared reports whether every client session shares one connection to
// the server.
func (s Server) Shared() bool { return s.Sessions == "shared" }

// Sep joins a server's name and its tool's name: SERVER__tool (policy.Sep).
const Sep = policy.Sep

// Prefixed reports whether the server's tools and prompts are exposed as
// NAME__tool (the default).
func (s Server) Prefixed() bool { return s.Prefix == nil || *s.Prefix }

// serverNameRE is what a server may be called: its name prefixes its tools'
// names (NAME__tool), which clients limit to [A-Za-z0-9_-]{1,64}.
var serverNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,31}$`)

// secretRefRE finds ${secret:NAME} references in env and header values.
var secretRefRE = regexp.MustCompile(`\$\{secret:([^}]*)\}`)

// secretRefs returns the secret names referenced in v, in order.
func secretRefs(v string) []string {
	var out []string
	for _, m := range secretRefRE.FindAllStringSubmatch(v, -1) {
		out = append(out, m[1])
	}
	return out
}

// SecretRefs are the NAMEs of the ${secret:NAME} references in v.
func SecretRefs(v string) []string { return secretRefs(v) }

// ExpandSecrets replaces each ${secret:NAME} in v with lookup(NAME).
func ExpandSecrets(v string, lookup func(string) string) string {
	return secretRefRE.ReplaceAllStringFunc(v, func(m string) string {
		return lookup(secretRefRE.FindStringSubmatch(m)[1])
	})
}

// CapabilityOf is the capability calls of server name's tools need.
func (s Server) CapabilityOf(name string) string {
	if s.Capability != "" {
		return s.Capability
	}
	return "upstream." + name
}

// Eager reports whether the server starts with the bridge.
func (s Server) Eager() bool { return s.Start == "eager" }

// RequestTimeout is the parsed timeout (30s by default).
func (s Server) RequestTimeout() time.Duration {
	if d := positive(s.Timeout); d > 0 {
		return d
	}
	return 30 * time.Second
}

// Exposes reports whether the upstream tool named tool is exposed.
func (s Server) Exposes(tool string) bool {
	if len(s.Allow) > 0 && !matchAny(s.Allow, tool) {
		return false
	}
	return !matchAny(s.Deny, tool)
}

// IsReadOnly reports whether the configuration declares tool read-only.
func (s Server) IsReadOnly(tool string) bool { return matchAny(s.ReadOnly, tool) }

// ApprovalOf is the configured approval of tool ("always", "never"), or ""
// when no pattern matches.
func (s Server) ApprovalOf(tool string) string {
	pats := make([]string, 0, len(s.Approval))
	for p := range s.Approval {
		pats = append(pats, p)
	}
	sort.Strings(pats)
	for _, p := range pats {
		if ok, _ := path.Match(p, tool); ok {
			return s.Approval[p]
		}
	}
	return ""
}

func matchAny(pats []string, name string) bool {
	for _, p := range pats {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// ServerCapabilities are the capabilities configuring servers grants:
// upstream.NAME for each. A server's custom capability is not among them:
// granting is [policy] grant's job alone, so no server entry can hand its
// tools (or anyone else's) process.run.
func (c *Config) ServerCapabilities() []string {
	var out []string
	for _, name := range sortedKeys(c.Servers) {
		out = append(out, "upstream."+name)
	}
	return out
}

// builtinCapabilities are those of the built-in tools.
var builtinCapabilities = []string{CapTextSearch, CapTraceRead, CapWorkspaceRead, CapWorkspacePropose, CapWorkspaceWrite, CapProcessRun}

func (c *Config) validateServers(bad func(key, format string, args ...any)) {
	for _, name := range sortedKeys(c.Servers) {
		s := c.Servers[name]
		key := "servers." + name
		if !serverNameRE.MatchString(name) {
			bad(key, "a server's name prefixes its tools' names (NAME__tool): use 1-32 letters, digits and '-', starting with a letter or digit")
		}
		validateTransport(key, s, bad)
		validateChoices(key, s, bad)
		validatePatterns(key, s, bad)
		validateCapability(key, name, s, bad)
		c.validateSecretRefs(key, s, bad)
		c.validateInheritEnv(key, s, bad)
		validateSandbox(key, s, bad)
	}
}

// validateURL checks a url server's URL: http or https, no credentials in
// it, no plaintext to another host unless allowed.
func validateURL(key string, s Server, bad func(key, format string, args ...any)) {
	u, err := url.Parse(s.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		bad(key+".url", "%q is not an http:// or https:// URL", s.URL)
	case u.User != nil:
		bad(key+".url", "credentials in the URL would be recorded: put them in headers with a ${secret:NAME} reference")
	case Plaintext(u) && !s.AllowPlaintext:
		bad(key+".url", "PlaintextUpstream: %s is another host over http://: its headers and tokens would cross the network in clear; use https://, or set allow_plaintext = true on %s if the network is yours", events.SafeURL(s.URL), key)
	}
}

// validateTransport checks that a server is a command or a URL, with the
// fields of its kind only, and no credential where it would be recorded
// or seen (a URL's user info, argv, an OAuth client secret in the file).
func validateTransport(key string, s Server, bad func(key, format string, args ...any)) {
	switch {
	case s.Command == "" && s.URL == "":
		bad(key, "set command (a stdio server) or url (a Streamable HTTP server)")
	case s.Command != "" && s.URL != "":
		bad(key, "set command or url, not both")
	case s.URL != "":
		validateURL(key, s, bad)
		if len(s.Args) > 0 || s.Cwd != "" || len(s.Env) > 0 {
			bad(key, "args, cwd and env are for command servers; a url server takes headers")
		}
	default:
		if s.AllowPlaintext {
			bad(key+".allow_plaintext", "allow_plaintext is for url servers")
		}
		if len(s.Headers) > 0 {
			bad(key+".headers", "headers are for url servers; a command server takes env")
		}
		if s.Transport != "" {
			bad(key+".transport", "transport is for url servers")
		}
	}
	for _, a := range s.Args {
		if len(secretRefs(a)) > 0 {
			bad(key+".args", "a secret in argv is visible to every local user (ps): pass it in env instead")
		}
	}
	if o := s.OAuth; o != nil {
		if s.URL == "" {
			bad(key+".oauth", "oauth is for url servers")
		}
		if o.ClientSecret != "" && len(secretRefs(o.ClientSecret)) == 0 {
			bad(key+".oauth.client_secret", "a client secret in the file would be recorded: use a ${secret:NAME} reference")
		}
		if o.RedirectPort < 0 || o.RedirectPort > 65535 {
			bad(key+".oauth.redirect_port", "%d is not a port", o.RedirectPort)
		}
	}
}

// validateChoices checks the fields that take one of a few words, and the
// timeout.
func validateChoices(key string, s Server, bad func(key, format string, args ...any)) {
	for _, f := range []struct {
		field, value string
		allowed      []string
	}{
		{"transport", s.Transport, []string{"streamable", "sse"}},
		{"sessions", s.Sessions, []string{"per-client", "shared"}},
		{"start", s.Start, []string{"lazy", "eager"}},
	} {
		if f.value != "" && !slices.Contains(f.allowed, f.value) {
			bad(key+"."+f.field, "%q is not one of %s", f.value, strings.Join(f.allowed, ", "))
		}
	}
	if s.Timeout != "" && positive(s.Timeout) == 0 {
		bad(key+".timeout", "%q is not a positive duration such as \"30s\"", s.Timeout)
	}
}

// validatePatterns checks the tool patterns of allow, deny, read_only and
// approval, and approval's values.
func validatePatterns(key string, s Server, bad func(key, format string, args ...any)) {
	for _, f := range []struct {
		field string
		pats  []string
	}{{"allow", s.Allow}, {"deny", s.Deny}, {"read_only", s.ReadOnly}} {
		for _, p := range f.pats {
			if _, err := path.Match(p, ""); err != nil {
				bad(key+"."+f.field, "%q is not a valid pattern (use * and ?, as in \"create_*\")", p)
			}
		}
	}
	for _, p := range sortedKeys(s.Approval) {
		if _, err := path.Match(p, ""); err != nil {
			bad(key+".approval", "%q is not a valid pattern", p)
		}
		if v := s.Approval[p]; v != "always" && v != "never" {
			bad(key+".approval", "%q = %q: want always or never", p, v)
		}
	}
}

// validateCapability refuses a capability that would let a server's tools
// pass as built-in ones or as another server's.
func validateCapability(key, name string, s Server, bad func(key, format string, args ...any)) {
	switch {
	case s.Capability != "" && strings.ContainsAny(s.Capability, " \t"):
		bad(key+".capability", "capability %q has spaces", s.Capability)
	case slices.Contains(builtinCapabilities, s.Capability):
		bad(key+".capability", "%q is a built-in capability: a server's tools need their own (the default upstream.%s, or a name of yours that [policy] grant lists)", s.Capability, name)
	case strings.HasPrefix(s.Capability, "upstream.") && s.Capability != "upstream."+name:
		bad(key+".capability", "%q is another server's capability", s.Capability)
	}
}

// validateSecretRefs checks that every ${secret:NAME} in env and headers
// names a defined secret.
func (c *Config) validateSecretRefs(key string, s Server, bad func(key, format string, args ...any)) {
	for _, f := range []struct {
		field string
		vals  map[string]string
	}{{"env", s.Env}, {"headers", s.Headers}} {
		for _, k := range sortedKeys(f.vals) {
			for _, ref := range secretRefs(f.vals[k]) {
				if _, ok := c.Secrets[ref]; !ok {
					bad(key+"."+f.field, "%s refers to secret %q, which is not defined (add a [secrets.%s] table with env or file)", k, ref, ref)
				}
			}
		}
	}
}

// ServerSecrets lists the secrets server s references, sorted, once each.
func (s Server) ServerSecrets() []string {
	seen := map[string]bool{}
	for _, vals := range []map[string]string{s.Env, s.Headers} {
		for _, v := range vals {
			for _, r := range secretRefs(v) {
				seen[r] = true
			}
		}
	}
	if s.OAuth != nil {
		for _, r := range secretRefs(s.OAuth.ClientSecret) {
			seen[r] = true
		}
	}
	return sortedKeys(seen)
}

// Credentials are the values in the servers' URLs and argv that look like
// credentials (what Describe redacts): the bridge registers them with the
// redactor, so they are removed wherever they appear, the recorded
// configuration text included.
func (c *Config) Credentials() []string {
	var out []string
	for _, name := range sortedKeys(c.Servers) {
		s := c.Servers[name]
		out = append(out, events.URLCredentials(s.URL)...)
		vals, _ := events.ArgCredentials(s.Args)
		out = append(out, vals...)
	}
	return out
}

// Describe names where the server is — its command line or URL — as it
// may be recorded: a credential-looking path segment, query values and the
// values of secret-named flags (--api-key X) are redacted.
func (s Server) Describe() string {
	if s.URL != "" {
		return events.SafeURL(s.URL)
	}
	return strings.TrimSpace(fmt.Sprint(s.Command, " ", strings.Join(events.SafeArgs(s.Args), " ")))
}

// Plaintext reports whether u is dialed in clear to another host: http://
// to a host that is not this machine's loopback (localhost, *.localhost,
// 127.0.0.0/8, ::1). Names are not resolved.
func Plaintext(u *url.URL) bool {
	if u.Scheme != "http" {
		return false
	}
	h := strings.ToLower(strings.TrimSuffix(u.Hostname(), "."))
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return false
	}
	if ip, err := netip.ParseAddr(h); err == nil && ip.Unmap().IsLoopback() {
		return false
	}
	return true
}
