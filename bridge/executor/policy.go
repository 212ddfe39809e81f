package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
	"github.com/tracebridge/tracebridge/projections"
)

// decision is the policy's answer for one call.
type decision struct {
	Allowed bool     `json:"allowed"`
	Reason  string   `json:"reason"`
	Granted []string `json:"granted,omitempty"`
	Missing []string `json:"missing,omitempty"`
	// Rule is the [policy.rules] rule that decided (its effect: allow
	// without approval, approve, deny), Matched every rule that matched;
	// Version the policy version in force (config.PolicyVersion).
	Rule    string   `json:"rule,omitempty"`
	Effect  string   `json:"effect,omitempty"`
	Matched []string `json:"matched,omitempty"`
	Version string   `json:"version,omitempty"`
	// Code is why a call was not allowed (PolicyDenied, PolicyRuleFailed,
	// ConfigInvalid).
	Code events.Code `json:"-"`
}

// gate grants capabilities, denies tools and applies the rules on
// arguments, from tracebridge.toml. A broken file (broken != nil) denies
// everything.
type gate struct {
	grants  map[string]bool
	deny    []string // tool ids or path.Match patterns of them
	rules   *policy.RuleSet
	version string
	broken  error
}

func newPolicy(c *config.Config, broken error) *gate {
	p := &gate{grants: map[string]bool{}, broken: broken}
	if c != nil && broken == nil {
		rs, err := c.Rules()
		if err != nil {
			p.broken = err
		}
		p.rules, p.version = rs, c.PolicyVersion()
	}
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

// decide applies the grants and denials to d, then the rules to the call
// input gives (asked for only when there are rules: parsing the
// arguments is not free): a rule may deny, require approval or waive it.
func (p *gate) decide(ctx context.Context, d *Descriptor, input func() policy.Input) decision {
	dec := p.decideTool(d)
	dec.Version = p.version
	if !dec.Allowed || p.rules.Len() == 0 {
		return dec
	}
	v := p.rules.Decide(ctx, input())
	dec.Rule, dec.Effect, dec.Matched = v.Rule, v.Effect, v.Matched
	switch {
	case v.Failed != "":
		dec.Allowed, dec.Code, dec.Reason = false, events.CodePolicyRuleFailed, v.Message
	case v.Effect == policy.EffectDeny:
		dec.Allowed, dec.Code, dec.Reason = false, events.CodePolicyDenied, "rule "+v.Rule+" denies it"+colon(v.Message)
	case v.Effect == policy.EffectApprove:
		dec.Reason += "; rule " + v.Rule + " requires approval" + colon(v.Message)
	case v.Effect == policy.EffectAllow:
		dec.Reason += "; rule " + v.Rule + " allows it without approval" + colon(v.Message)
	}
	return dec
}

func colon(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

func (p *gate) decideTool(d *Descriptor) decision {
	if p.broken != nil {
		return decision{Code: events.CodeConfigInvalid, Reason: "the configuration is broken, so every tool is denied until it is fixed: " + p.broken.Error()}
	}
	for _, pat := range p.deny {
		if pat == d.ID {
			return decision{Code: events.CodePolicyDenied, Reason: fmt.Sprintf("tool %s is listed in policy.deny", d.ID)}
		}
		if policy.MatchesTool(pat, d.ID, d.Qualified()) {
			return decision{Code: events.CodePolicyDenied, Reason: fmt.Sprintf("tool %s matches %q in policy.deny", d.ID, pat)}
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
		return decision{Granted: granted, Missing: missing, Code: events.CodePolicyDenied,
			Reason: fmt.Sprintf("capability %s not granted (add it to policy.grant in tracebridge.toml)", strings.Join(missing, ", "))}
	}
	return decision{Allowed: true, Granted: granted, Reason: "all required capabilities granted"}
}

// ruleInput is what the rules see of the call: the tool, its server and
// annotations, the arguments parsed, the client and session, the caller,
// the time.
func (c *call) ruleInput() policy.Input {
	t := policy.Tool{ID: c.tool.ID, Server: c.tool.Server(), Name: c.tool.Name, Annotations: projections.AnnotationFlags(annotationsOf(c.tool))}
	caller := policy.CallerOf(c.inv.Transport)
	caller.User = c.inv.User
	return policy.NewInput(t, c.inv.Args, c.inv.Client, c.inv.SessionID.String(), caller, c.x.opts.Now())
}
