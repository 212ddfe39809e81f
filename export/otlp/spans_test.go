package otlp

import (
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"

	"github.com/tracebridge/tracebridge/events"
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
