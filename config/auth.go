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
	for _, s := range a.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\"\\") {
			bad("auth.scopes", "%q is not a scope (no spaces or quotes)", s)
		}
	}
}

func loopbackHost(h string) bool { return h == "127.0.0.1" || h == "localhost" || h == "::1" }
