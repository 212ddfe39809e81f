package otlp

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// guardTargets are the guard's kinds, each with what it judged, in the
// terms of the GenAI guardrail conventions (in development upstream:
// gen_ai.operation.name "apply_guardrail", a decision and a target).
var guardTargets = map[string]string{
	events.KindGuardArgs:           "tool_call",
	events.KindGuardResult:         "tool_result",
	events.KindUpstreamToolFlagged: "tool_definition",
}

// guardSpan is a guard judgment as an apply_guardrail span, a child of the
// step it judged: the verdict (deny, modify, warn) apart from the action
// enforced (block, redact, flag), the policy (the pack) and the rule, and
// the trigger's keyed hash (never its text: the event's attributes say it,
// redacted).
func guardSpan(e *events.Event, target string, parent *tracetest.SpanStub, opts Options) *tracetest.SpanStub {
	action := e.Attrs.Get("action")
	if action == "" && e.Kind == events.KindUpstreamToolFlagged {
		action = "block"
	}
	verdict := map[string]string{"block": "deny", "redact": "modify", "flag": "warn"}[action]
	rule := e.Attrs.Get(events.AttrRule)
	s := &tracetest.SpanStub{
		Name:        "apply_guardrail " + rule,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: parent.SpanContext.TraceID(), SpanID: spanID(e.ID), TraceFlags: trace.FlagsSampled}),
		Parent:      parent.SpanContext, SpanKind: trace.SpanKindInternal, StartTime: e.Time, EndTime: e.Time,
		Resource: opts.Resource, InstrumentationScope: Scope,
		Attributes: append([]attribute.KeyValue{
			attribute.String("gen_ai.operation.name", "apply_guardrail"),
			attribute.String("gen_ai.guardrail.name", "tracebridge guard"),
			attribute.String("gen_ai.guardrail.target.type", target),
			attribute.String("gen_ai.guardrail.decision.type", verdict),
			attribute.String("gen_ai.guardrail.policy.id", e.Attrs.Get("pack")),
			attribute.String("gen_ai.guardrail.rule.id", rule),
			attribute.String("tracebridge.guard.action", action),
			attribute.String("tracebridge.guard.trigger.hmac", e.Attrs.Get("triggerHmac")),
			attribute.String("tracebridge.guard.server", e.Attrs.Get(events.AttrServer)),
			attribute.String("tracebridge.guard.upstream_tool", e.Attrs.Get(projections.AttrUpTool)),
		}, attrs(e)...),
	}
	if e.Outcome.Failed() {
		s.Status = sdktrace.Status{Code: codes.Error, Description: string(e.Code)}
	}
	return s
}
