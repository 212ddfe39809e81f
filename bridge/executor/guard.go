package executor

import (
	"time"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// GuardActions is what the guard's rules do for server's tools under the
// configuration in force when it is asked.
func (x *Executor) GuardActions(server string) guard.Actions {
	cfg := x.rule.Load().cfg
	return func(rule string) string { return cfg.GuardAction(server, rule) }
}

// ResultRules is the policy in force, for its rules with phase = "result"
// (nil when it has none or is broken).
func (x *Executor) ResultRules() *policy.RuleSet {
	p := x.rule.Load().policy
	if p.broken != nil || !p.rules.HasPhase(policy.PhaseResult) {
		return nil
	}
	return p.rules
}

// FirstSight is [gateway] first_sight in force.
func (x *Executor) FirstSight() string { return x.rule.Load().cfg.FirstSightMode() }

// Flows is the memory of secrets servers returned, per session: the
// gateway fills it from results, the guard step reads it.
func (x *Executor) Flows() *guard.Flows { return x.flows }

// guardArgs judges an upstream tool's arguments with the pack
// (guard.Args) and the cross-server rule before policy: a finding whose
// rule blocks denies the call (PolicyDenied; InvalidArguments for an
// undeclared property), one that flags is recorded and the call goes on.
// The bridge's own tools are not judged here: their arguments are checked
// by the host (PathRefused) and their schemas.
func (c *call) guardArgs() (Result, bool) {
	server := c.tool.Server()
	if server == "" {
		return Result{}, false
	}
	act := c.x.GuardActions(server)
	fs := guard.Args(guard.Call{Server: server, Tool: c.tool.Name, Description: c.tool.Description, Schema: c.tool.RawSchema, Args: c.inv.Args}, act)
	var from guard.Origin
	if f, o, ok := c.x.flows.Check(c.inv.SessionID, server, c.inv.Args, act, c.x.opts.Emitter.Redactor().Fingerprint); ok {
		fs, from = append(fs, f), o
	}
	if len(fs) == 0 {
		return Result{}, false
	}
	first := fs[0]
	for _, f := range fs {
		if f.Action == policy.ActionBlock {
			first = f
			break
		}
	}
	attrs := events.A(events.AttrRule, first.Rule, "action", guard.Worst(fs), "pack", policy.Pack, "trigger", first.Trigger,
		"triggerHmac", c.x.opts.Emitter.Redactor().Fingerprint(first.Trigger),
		"findings", guard.JSON(fs), events.AttrServer, server)
	if !from.RequestID.IsZero() {
		attrs.Set("fromServer", from.Server)
		attrs.Set("fromRequest", from.RequestID.String())
	}
	if guard.Worst(fs) != policy.ActionBlock {
		c.emit(events.KindGuardArgs, events.OK, "", time.Time{}, attrs)
		return Result{}, false
	}
	code := events.CodePolicyDenied
	if first.Rule == "undeclared-property" {
		code = events.CodeInvalidArguments
	}
	c.emit(events.KindGuardArgs, events.Denied, code, time.Time{}, attrs)
	return fail(code, "the guard refused the call (rule "+first.Rule+" of "+policy.Pack+"): "+first.Why)
}
