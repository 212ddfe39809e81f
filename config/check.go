package config

import (
	"encoding/json"
	"fmt"
	"maps"
	pathpkg "path"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// Served is what a bridge with a configuration serves: the ids of its
// tools (built-in and discovered) and the capabilities they need.
type Served struct {
	Tools        map[string]bool
	Capabilities map[string]bool
	// Schemas are the input schemas (JSON) of the tools whose schema is
	// known: the bridge's own, discovered ones, upstream ones the log pins.
	Schemas map[string]json.RawMessage
}

// Unknown lists the names c gives that match nothing a bridge serving s
// serves: a granted capability no tool needs, a deny entry (an id or a
// pattern) that matches no tool and no configured server's prefix, a
// [tools.ID] no tool has. Each line starts with path. A configured server's
// tools (SERVER__tool) are listed only when it runs, so they count as
// served; a server without a prefix may serve a tool of any name.
func (c *Config) Unknown(path string, s Served) []string {
	var problems []string
	for _, g := range c.Policy.Grant {
		if !s.Capabilities[g] {
			problems = append(problems, fmt.Sprintf("%s: policy.grant: %q is not a capability (known: %s)", path, g, strings.Join(slices.Sorted(maps.Keys(s.Capabilities)), ", ")))
		}
	}
	for _, d := range c.Policy.Deny {
		matches := c.upstreamTool(d)
		for id := range s.Tools {
			if ok, _ := pathpkg.Match(d, id); ok {
				matches = true
			}
		}
		if !matches {
			problems = append(problems, fmt.Sprintf("%s: policy.deny: %q matches no tool this bridge serves (see tools/list, the discovery dirs, or name a configured server's tools as SERVER__tool)", path, d))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.Tools)) {
		if !s.Tools[id] && !c.upstreamTool(id) {
			problems = append(problems, fmt.Sprintf("%s: [tools.%s]: not a tool this bridge serves (see tools/list, or the discovery dirs)", path, id))
		}
	}
	return append(problems, c.ruleFields(path, s.Schemas)...)
}

// upstreamTool reports whether id may name a configured server's tool.
func (c *Config) upstreamTool(id string) bool {
	server, _, ok := strings.Cut(id, Sep)
	if _, configured := c.Servers[server]; ok && configured {
		return true
	}
	for _, s := range c.Servers {
		if !s.Prefixed() {
			return true
		}
	}
	return false
}

// Warnings lists what works but leaks: a server URL with a query or a
// credential-looking path (recorded redacted, but a credential belongs in
// headers), a secret-named flag's value in a server's argv (every local
// user reads argv).
func (c *Config) Warnings() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(c.Servers)) {
		sv := c.Servers[name]
		if sv.URL != "" && events.SafeURL(sv.URL) != sv.URL {
			out = append(out, fmt.Sprintf("servers.%s.url has a query or a credential-looking path (recorded as %s): put a credential in headers with ${secret:NAME}", name, events.SafeURL(sv.URL)))
		}
		if _, flags := events.ArgCredentials(sv.Args); len(flags) > 0 {
			out = append(out, fmt.Sprintf("servers.%s.args holds a secret-named flag's value (every local user sees argv): pass it in env with ${secret:NAME}", name))
		}
	}
	return out
}
