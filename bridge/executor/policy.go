package executor

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/config"
)

// decision is the policy's answer for one call.
type decision struct {
	Allowed bool     `json:"allowed"`
	Reason  string   `json:"reason"`
	Granted []string `json:"granted,omitempty"`
	Missing []string `json:"missing,omitempty"`
}

// policy grants capabilities and denies tools, from tracebridge.toml. A
// broken file (broken != nil) denies everything.
type policy struct {
	grants map[string]bool
	deny   []string // tool ids or path.Match patterns of them
	broken error
}

func newPolicy(c *config.Config, broken error) *policy {
	p := &policy{grants: map[string]bool{}, broken: broken}
	if c != nil {
		for _, g := range c.Policy.Grant {
			p.grants[g] = true
		}
		p.deny = c.Policy.Deny
		// Configuring an upstream server grants upstream.NAME, the
		// capability its tools need by default (a custom one must be in
		// policy.grant).
		for _, g := range c.ServerCapabilities() {
			p.grants[g] = true
		}
	}
	return p
}

func (p *policy) decide(d *Descriptor) decision {
	if p.broken != nil {
		return decision{Reason: "the configuration is broken, so every tool is denied until it is fixed: " + p.broken.Error()}
	}
	for _, pat := range p.deny {
		if pat == d.ID {
			return decision{Reason: fmt.Sprintf("tool %s is listed in policy.deny", d.ID)}
		}
		if ok, _ := path.Match(pat, d.ID); ok {
			return decision{Reason: fmt.Sprintf("tool %s matches %q in policy.deny", d.ID, pat)}
		}
	}
	var granted, missing []string
	for _, c := range d.Capabilities {
		if p.grants[c] {
			granted = append(granted, c)
		} else {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return decision{Granted: granted, Missing: missing,
			Reason: fmt.Sprintf("capability %s not granted (add it to policy.grant in tracebridge.toml)", strings.Join(missing, ", "))}
	}
	return decision{Allowed: true, Granted: granted, Reason: "all required capabilities granted"}
}
