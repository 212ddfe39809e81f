package config

import (
	"slices"

	"github.com/tracebridge/tracebridge/policy"
)

// Guard is [guard]: the rules of the pack (policy.Pack) an operator turns
// off or gives another action, for every server ([servers.NAME] guard
// overrides it for one).
type Guard struct {
	// Off lists rule ids of the pack that do not apply.
	Off []string `toml:"off"`
	// Actions maps a rule id to its action (policy.Action*).
	Actions map[string]string `toml:"actions"`
}

// Gateway is [gateway]: how the gateway meets an upstream's tools.
type Gateway struct {
	// FirstSight is what a tool seen for the first time meets: "inspect"
	// (default: pinned unless the guard flags it, then held), "review"
	// (every new tool held until an operator accepts it) or "trust"
	// (pinned unjudged, as before the guard).
	FirstSight string `toml:"first_sight"`
}

// First-sight modes.
const (
	FirstSightInspect = "inspect"
	FirstSightReview  = "review"
	FirstSightTrust   = "trust"
)

// FirstSightMode is [gateway] first_sight with its default.
func (c *Config) FirstSightMode() string {
	if c.Gateway.FirstSight == "" {
		return FirstSightInspect
	}
	return c.Gateway.FirstSight
}

// GuardAction is what rule id of the pack does for server's tools ("" for
// the bridge's own): the server's choice, else [guard]'s, else the pack's
// default; policy.ActionOff when it is turned off.
func (c *Config) GuardAction(server, id string) string {
	if s, ok := c.Servers[server]; ok && server != "" {
		if a := s.Guard[id]; a != "" {
			return a
		}
	}
	if a := c.Guard.Actions[id]; a != "" {
		return a
	}
	if slices.Contains(c.Guard.Off, id) {
		return policy.ActionOff
	}
	r, _ := policy.PackRuleOf(id)
	return r.Default
}

func (c *Config) validateGuard(bad func(key, format string, args ...any)) {
	switch c.Gateway.FirstSight {
	case "", FirstSightInspect, FirstSightReview, FirstSightTrust:
	default:
		bad("gateway.first_sight", "%q is not inspect, review or trust", c.Gateway.FirstSight)
	}
	for _, id := range c.Guard.Off {
		if _, ok := policy.PackRuleOf(id); !ok {
			bad("guard.off", "%q is not a rule of %s (run `tracebridge policy pack` for the list)", id, policy.Pack)
		}
	}
	for _, id := range sortedKeys(c.Guard.Actions) {
		if err := policy.CheckAction(id, c.Guard.Actions[id]); err != nil {
			bad("guard.actions."+id, "%v", err)
		}
	}
	for _, name := range sortedKeys(c.Servers) {
		g := c.Servers[name].Guard
		for _, id := range sortedKeys(g) {
			if err := policy.CheckAction(id, g[id]); err != nil {
				bad("servers."+name+".guard."+id, "%v", err)
			}
		}
	}
}
