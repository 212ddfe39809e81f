package config

import (
	"net/url"
	"strings"
)

// Auth makes the HTTP front door an OAuth 2.1 resource server (the MCP
// authorization spec): access tokens of Issuer, for Resource, with
// Scopes. The data dir's bearer token (`tracebridge token`) keeps working
// beside it for the one local user. Empty Issuer: off.
type Auth struct {
	// Issuer is the authorization server, exactly as its tokens' iss.
	Issuer string `toml:"issuer"`
	// Resource is the front door's own URI (its tokens' audience, RFC 8707),
	// e.g. "https://mcp.example.com/mcp"; its host is a Host the front door
	// answers besides the loopback names. Default: http://127.0.0.1:PORT/mcp.
	Resource string `toml:"resource"`
	// Scopes a token must grant (all of them); advertised in the
	// protected resource metadata.
	Scopes []string `toml:"scopes"`
	// GroupsClaim names the token claim holding the user's groups. Default
	// "groups".
	GroupsClaim string `toml:"groups_claim"`
	// JWKSURL is where the issuer's keys are. Default: its metadata says.
	JWKSURL string `toml:"jwks_url"`
	// IntrospectionClientID and IntrospectionClientSecret (a
	// ${secret:NAME} reference) are the front door's own client at the
	// issuer: set, an opaque access token is checked by asking the issuer
	// (RFC 7662); JWTs are checked as before.
	IntrospectionClientID     string `toml:"introspection_client_id"`
	IntrospectionClientSecret string `toml:"introspection_client_secret"`

	// UIClientID is the operator UI's OAuth client at the issuer (public,
	// PKCE): set, the UI signs people in with OpenID Connect (the local
	// launch link keeps working for the machine's own user). Its redirect
	// URI is UIOrigin + "/auth/callback".
	UIClientID string `toml:"ui_client_id"`
	// UIOrigin is where the UI answers, "http://NAME.localhost:PORT" (a
	// loopback name: the redirect URI registered at the issuer must not
	// change between starts). Default http://tracebridge.localhost:7077.
	UIOrigin string `toml:"ui_origin"`
	// Roles map the UI's roles to groups: viewer reads, approver also
	// decides calls and proposals, admin also accepts changed tools. A
	// person in none of them is not let in.
	Roles Roles `toml:"roles"`
}

// Roles are the groups of each UI role.
type Roles struct {
	Viewer   []string `toml:"viewer"`
	Approver []string `toml:"approver"`
	Admin    []string `toml:"admin"`
}

// DefaultUIOrigin is where the UI answers with [auth] ui_client_id.
const DefaultUIOrigin = "http://tracebridge.localhost:7077"

// Origin is the UI's origin with sign-in.
func (a Auth) Origin() string {
	if a.UIOrigin != "" {
		return strings.TrimSuffix(a.UIOrigin, "/")
	}
	return DefaultUIOrigin
}

// On reports whether the front door checks access tokens.
func (a Auth) On() bool { return a.Issuer != "" }

func (c *Config) validateAuth(bad func(key, format string, args ...any)) {
	a := c.Auth
	if !a.On() {
		if a.Resource != "" || len(a.Scopes) > 0 || a.JWKSURL != "" || a.GroupsClaim != "" {
			bad("auth.issuer", "set the issuer (the authorization server whose tokens the front door accepts) or remove [auth]")
		}
		return
	}
	httpsOrLoopback := func(key, v string) {
		u, err := url.Parse(v)
		switch {
		case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
			bad(key, "%q is not an http(s) URL", v)
		case u.Scheme == "http" && !loopbackHost(u.Hostname()):
			bad(key, "%q: tokens and keys travel in the clear over http: use https (http is for a loopback host only)", v)
		case u.User != nil || u.RawQuery != "" || u.Fragment != "":
			bad(key, "%q: no credentials, query or fragment", v)
		}
	}
	httpsOrLoopback("auth.issuer", a.Issuer)
	if a.Resource != "" {
		httpsOrLoopback("auth.resource", a.Resource)
	}
	if a.JWKSURL != "" {
		httpsOrLoopback("auth.jwks_url", a.JWKSURL)
	}
	a.validateUI(bad)
	if (a.IntrospectionClientID == "") != (a.IntrospectionClientSecret == "") {
		bad("auth.introspection_client_id", "set both introspection_client_id and introspection_client_secret (a ${secret:NAME} reference), or neither")
	}
	for _, ref := range secretRefs(a.IntrospectionClientSecret) {
		if _, ok := c.Secrets[ref]; !ok {
			bad("auth.introspection_client_secret", "refers to secret %q, which is not defined (add a [secrets.%s] table with env or file)", ref, ref)
		}
	}
	if a.IntrospectionClientSecret != "" && len(secretRefs(a.IntrospectionClientSecret)) == 0 {
		bad("auth.introspection_client_secret", "write it as a ${secret:NAME} reference: a secret in the file would be recorded with the configuration")
	}
	for _, s := range a.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			bad("auth.scopes", "%q is not a scope (no spaces or quotes)", s)
		}
	}
}

// validateUI checks the UI's sign-in.
func (a Auth) validateUI(bad func(key, format string, args ...any)) {
	if a.UIOrigin != "" {
		if u, err := url.Parse(a.UIOrigin); err != nil || u.Scheme != "http" || !strings.HasSuffix(u.Hostname(), ".localhost") || u.Port() == "" || strings.Trim(u.Path, "/") != "" {
			bad("auth.ui_origin", "%q: want http://NAME.localhost:PORT (the UI listens on loopback only)", a.UIOrigin)
		}
	}
	if a.UIClientID != "" && len(a.Roles.Viewer)+len(a.Roles.Approver)+len(a.Roles.Admin) == 0 {
		bad("auth.roles", "with ui_client_id, name the groups of at least one role ([auth.roles] viewer, approver, admin): no one would be let in")
	}
}

func loopbackHost(h string) bool { return h == "127.0.0.1" || h == "localhost" || h == "::1" }
