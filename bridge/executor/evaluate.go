package executor

import (
	"context"
	"encoding/json"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// Verdicts of Evaluate: what the policy makes of a call before it runs.
const (
	VerdictAllowed = "allowed" // runs without asking
	VerdictGated   = "gated"   // runs once an operator approves
	VerdictDenied  = "denied"
)

// Evaluation is what cfg's policy decides for a call of d with in: the
// verdict, the code of a denial, and the rule that decided (if any).
type Evaluation struct {
	Verdict string      `json:"verdict"`
	Code    events.Code `json:"code,omitempty"`
	Rule    string      `json:"rule,omitempty"`
	Effect  string      `json:"effect,omitempty"`
	Matched []string    `json:"matched,omitempty"`
	Reason  string      `json:"reason"`
	Version string      `json:"version"`
}

// Evaluator decides calls under one configuration as the executor's policy
// and approval steps would, without running anything. `policy test`
// re-decides recorded calls with it.
type Evaluator struct {
	cfg *config.Config
	p   *gate
	// Schemas are upstream tools' input schemas by catalog id (the pinned
	// descriptors'): the guard's undeclared-property rule reads them. A
	// tool without one is judged without that rule.
	Schemas map[string]json.RawMessage
}

// NewEvaluator compiles cfg's policy once for many calls.
func NewEvaluator(cfg *config.Config) *Evaluator {
	return &Evaluator{cfg: cfg, p: newPolicy(cfg, nil)}
}

// Evaluate decides a call of d with in under cfg (NewEvaluator).
func Evaluate(ctx context.Context, cfg *config.Config, d Descriptor, in policy.Input) Evaluation {
	return NewEvaluator(cfg).Evaluate(ctx, d, in)
}

// Evaluate decides a call of d with in: grants and denials, the rules,
// then whether it needs approval (the tool's own requirement, [tools.ID]
// approval, and for an upstream server's tool its server's read_only and
// approval lists).
func (x *Evaluator) Evaluate(ctx context.Context, d Descriptor, in policy.Input) Evaluation {
	cfg, p := x.cfg, x.p
	if d.Server() != "" && p.broken == nil { // the guard's pack first, as a live call meets it
		act := func(rule string) string { return cfg.GuardAction(d.Server(), rule) }
		if f, blocked := guard.Blocking(judgeArgs(&d, x.Schemas[d.ID], in.RawArgs, act)); blocked {
			code, reason := guardDenial(f)
			return Evaluation{Verdict: VerdictDenied, Code: code, Rule: policy.Pack + ":" + f.Rule, Effect: policy.EffectDeny, Reason: reason, Version: p.version}
		}
	}
	dec := p.decide(ctx, &d, func() policy.Input { return in })
	ev := Evaluation{Rule: dec.Rule, Effect: dec.Effect, Matched: dec.Matched, Reason: dec.Reason, Version: dec.Version, Code: dec.Code}
	if !dec.Allowed {
		ev.Verdict = VerdictDenied
		return ev
	}
	ev.Code = ""
	if s, ok := cfg.Servers[in.Server]; ok && in.Server != "" && d.Name != "" {
		readOnly := in.Annotations["readOnlyHint"] || s.IsReadOnly(d.Name)
		d.Approval = s.ApprovalOf(d.Name)
		if d.Approval == "" {
			d.Approval = "never"
			if !readOnly {
				d.Approval = "always"
			}
		}
	}
	c := &call{tool: &Tool{Descriptor: d}, r: &rules{cfg: cfg}, env: envelope{Policy: &dec}}
	ev.Verdict = VerdictAllowed
	if c.approvalRequired() {
		ev.Verdict = VerdictGated
	}
	return ev
}
