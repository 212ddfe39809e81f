package otlp

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// A run's spans: the server span at the root, steps nested by what was
// open when they started (the pipe call inside the tool inside the
// executor), point events as span events, the failure's code as the error
// status, and the same ids every time.
func TestSpansOfARun(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	req, op := events.NewID(), events.NewID()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(seq uint64, ms int, kind string, outcome events.Outcome, code events.Code, opID events.ID) events.Event {
		info, _ := events.Lookup(kind)
		return events.Event{ID: events.NewID(), Seq: seq, Time: at(ms), Kind: kind, Boundary: info.Boundary, RequestID: req,
			OperationID: opID, Outcome: outcome, Code: code, Attrs: events.A("method", "tools/call", "tool", "get_selection")}
	}
	evs := []events.Event{
		ev(1, 0, events.KindMCPRequestReceived, events.OK, "", events.ID{}),
		ev(2, 1, events.KindExecutorStarted, events.OK, "", op),
		ev(3, 1, events.KindPolicyDecided, events.OK, "", op),
		ev(4, 2, events.KindToolStarted, events.OK, "", op),
		ev(5, 3, events.KindPipeRequestSent, events.OK, "", op),
		ev(6, 8, events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, op),
		ev(7, 8, events.KindToolCompleted, events.Unavailable, events.CodePipeUnavailable, op),
		ev(8, 9, events.KindExecutorAudit, events.Unavailable, events.CodePipeUnavailable, op),
		ev(9, 9, events.KindMCPResponseSent, events.Unavailable, events.CodePipeUnavailable, events.ID{}),
	}
	spans := Spans(evs, Options{})
	if len(spans) != 4 { // server, executor, tool, pipe
		t.Fatalf("%d spans", len(spans))
	}
	byName := map[string]int{}
	for i, s := range spans {
		byName[s.Name()] = i
	}
	root := spans[0]
	if root.Name() != "tools/call get_selection" || root.Status().Code != codes.Error || root.Status().Description != "PipeUnavailable" ||
		root.EndTime().Sub(root.StartTime()) != 9*time.Millisecond || root.SpanContext().TraceID() != traceID(req) {
		t.Fatalf("server span %q %v %v", root.Name(), root.Status(), root.EndTime().Sub(root.StartTime()))
	}
	exec := spans[byName["executor executor.started"]]
	tool := spans[byName["tool tool.started"]]
	pipe := spans[byName["pipe pipe.request.sent"]]
	if exec.Parent().SpanID() != root.SpanContext().SpanID() || tool.Parent().SpanID() != exec.SpanContext().SpanID() ||
		pipe.Parent().SpanID() != tool.SpanContext().SpanID() {
		t.Fatal("steps are not nested executor > tool > pipe")
	}
	if pipe.Status().Description != "PipeUnavailable" || pipe.EndTime() != at(8) {
		t.Fatalf("pipe span %v ends %v", pipe.Status(), pipe.EndTime())
	}
	found := false
	for _, e := range exec.Events() {
		found = found || e.Name == events.KindPolicyDecided
	}
	if !found {
		t.Fatal("policy.decided is not an event of the executor span")
	}
	again := Spans(evs, Options{})
	for i := range spans {
		if !spans[i].SpanContext().Equal(again[i].SpanContext()) {
			t.Fatal("ids differ between two exports")
		}
	}
}

// The result attribute is the envelope's result as text, not its JSON
// quoting of it (content = true double-escaped quotes and newlines).
func TestResultIsNotEscapedTwice(t *testing.T) {
	for envelope, want := range map[string]string{
		`{"tool":"t","result":"say \"hi\"\nbye","outcome":"ok"}`: "say \"hi\"\nbye",
		`{"tool":"t","result":"cut here \"q\" and`:               `cut here "q" and`,
		`{"tool":"t"}`: "",
	} {
		if got := resultOf(envelope); got != want {
			t.Errorf("resultOf(%s) = %q, want %q", envelope, got, want)
		}
	}
}

// A guard judgment is an apply_guardrail span in the executor's: the
// verdict apart from the action, the pack and the rule, the trigger's
// keyed hash.
func TestGuardJudgmentIsAGuardrailSpan(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	req, op := events.NewID(), events.NewID()
	ev := func(seq uint64, kind string, outcome events.Outcome, code events.Code, attrs events.Attrs) events.Event {
		info, _ := events.Lookup(kind)
		return events.Event{ID: events.NewID(), Seq: seq, Time: t0.Add(time.Duration(seq) * time.Millisecond), Kind: kind, Boundary: info.Boundary,
			RequestID: req, OperationID: op, Outcome: outcome, Code: code, Attrs: attrs}
	}
	evs := []events.Event{
		ev(1, events.KindMCPRequestReceived, events.OK, "", events.A("method", "tools/call", "tool", "web__fetch")),
		ev(2, events.KindExecutorStarted, events.OK, "", nil),
		ev(3, events.KindGuardArgs, events.Denied, events.CodePolicyDenied, events.A("rule", "private-destination", "action", "block",
			"pack", "tracebridge/default@1", "trigger", "http://169.254.169.254/", "triggerHmac", "0badc0de")),
		ev(4, events.KindExecutorAudit, events.Denied, events.CodePolicyDenied, nil),
		ev(5, events.KindMCPResponseSent, events.Denied, events.CodePolicyDenied, nil),
	}
	var guard sdktrace.ReadOnlySpan
	for _, s := range Spans(evs, Options{}) {
		if s.Name() == "apply_guardrail private-destination" {
			guard = s
		}
	}
	if guard == nil {
		t.Fatal("no apply_guardrail span")
	}
	got := map[string]string{}
	for _, a := range guard.Attributes() {
		got[string(a.Key)] = a.Value.String()
	}
	for k, v := range map[string]string{"gen_ai.operation.name": "apply_guardrail", "gen_ai.guardrail.decision.type": "deny", "tracebridge.guard.action": "block",
		"gen_ai.guardrail.policy.id": "tracebridge/default@1", "gen_ai.guardrail.rule.id": "private-destination", "gen_ai.guardrail.target.type": "tool_call",
		"tracebridge.guard.trigger.hmac": "0badc0de"} {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if guard.Status().Code != codes.Error {
		t.Errorf("a block is an error status: %v", guard.Status())
	}
}

// A run of an authenticated user ([auth]) names them on its server span
// with the OpenTelemetry user.* attributes; a run of no one in particular
// carries none.
func TestServerSpanNamesTheUser(t *testing.T) {
	req := events.NewID()
	u := identity.User{Subject: "u-alice", Name: "alice", Email: "alice@example.com", Groups: []string{"platform", "approvers"}, ClientID: "team-mcp"}
	for _, who := range []identity.User{u, {}} {
		attrs := events.A(append([]string{"method", "tools/call", "tool", "t"}, who.Attrs()...)...)
		evs := []events.Event{{ID: events.NewID(), Seq: 1, Time: time.Now(), Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: attrs}}
		got := map[string]string{}
		for _, kv := range Spans(evs, Options{})[0].Attributes() {
			got[string(kv.Key)] = kv.Value.String()
		}
		want := map[string]string{"user.id": "u-alice", "user.name": "alice", "user.email": "alice@example.com", "user.roles": `["platform","approvers"]`, "oauth.client.id": "team-mcp"}
		for k, v := range want {
			if who.IsZero() && got[k] != "" {
				t.Errorf("no one's run has %s = %q", k, got[k])
			}
			if !who.IsZero() && got[k] != v {
				t.Errorf("%s = %q, want %q", k, got[k], v)
			}
		}
	}
}
