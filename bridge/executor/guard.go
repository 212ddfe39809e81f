package executor

import (
	"encoding/json"
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
	fs := judgeArgs(&c.tool.Descriptor, c.tool.RawSchema, c.inv.Args, act)
	var from guard.Origin
	if f, o, ok := c.x.flows.Check(c.inv.SessionID, server, c.inv.Args, act, c.x.opts.Emitter.Redactor().Fingerprint); ok {
		fs, from = append(fs, f), o
	}
	if len(fs) == 0 {
		return Result{}, false
	}
	first, blocked := guard.Blocking(fs)
	if !blocked {
		first = fs[0]
	}
	attrs := guard.Attrs(first, fs, c.x.opts.Emitter.Redactor().Fingerprint).With(events.AttrServer, server)
	if !from.RequestID.IsZero() {
		attrs.Set("fromServer", from.Server)
		attrs.Set("fromRequest", from.RequestID.String())
	}
	if !blocked {
		c.emit(events.KindGuardArgs, events.OK, "", time.Time{}, attrs)
		return Result{}, false
	}
	code, reason := guardDenial(first)
	// The envelope says the call was decided, by which rule: `policy test`
	// reads it back.
	c.env.Policy = &decision{Reason: reason, Rule: policy.Pack + ":" + first.Rule, Effect: policy.EffectDeny, Version: c.r.policy.version, Code: code}
	c.emit(events.KindGuardArgs, events.Denied, code, time.Time{}, attrs)
	return fail(code, reason)
}

// judgeArgs is the pack's findings on a call of d (an upstream's tool)
// with args, its input schema raw.
func judgeArgs(d *Descriptor, raw json.RawMessage, args json.RawMessage, act guard.Actions) []guard.Finding {
	return guard.Args(guard.Call{Server: d.Server(), Tool: d.Name, Description: d.Description, Schema: raw, Args: args}, act)
}

// guardDenial is the code and reason of a call the pack's finding f
// denies: InvalidArguments for an undeclared property, else PolicyDenied.
func guardDenial(f guard.Finding) (events.Code, string) {
	code := events.CodePolicyDenied
	if f.Rule == "undeclared-property" {
		code = events.CodeInvalidArguments
	}
	return code, "the guard refused the call (rule " + f.Rule + " of " + policy.Pack + "): " + f.Why
}

// guardResult is a discovered tool's result v as its client may read it,
// judged with the pack's result rules as the gateway judges an upstream's
// (a secret the tool was handed reached the client in clear: only
// upstream results were judged); a failed Result when a rule blocks it.
// Other tools' results pass unchanged (an upstream's is judged by the
// gateway; the bridge's own by their hosts).
func (c *call) guardResult(v any) Result {
	if !c.tool.Recorded || c.tool.Server() != "" {
		return Result{Value: v}
	}
	red := c.x.opts.Emitter.Redactor()
	out, fs, _ := guard.Value(v, red, c.x.GuardActions(""))
	if len(fs) == 0 {
		return Result{Value: v}
	}
	attrs := guard.Attrs(fs[0], fs, red.Fingerprint).With(events.AttrTool, c.tool.ID)
	if out == nil {
		msg := "the guard blocked tool " + c.tool.ID + "'s result (rule " + fs[0].Rule + "): " + fs[0].Why
		c.emit(events.KindGuardResult, events.Denied, events.CodeResultBlocked, time.Time{}, attrs.With(events.AttrError, msg))
		return failed(events.CodeResultBlocked, msg)
	}
	c.emit(events.KindGuardResult, events.OK, "", time.Time{}, attrs)
	return Result{Value: out}
}
