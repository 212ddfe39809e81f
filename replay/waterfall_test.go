package replay

import (
	"math"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A call that waited 5 s for an operator, then ran an upstream tool for
// 200 ms: the waterfall has the wait as its own bar, and the time per
// boundary counts each instant once, so the upstream is not blamed for
// the operator's 5 s and the boundaries add up to the request's length.
func TestWaterfallCountsEachInstantOnce(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	ev := func(kind string, b events.Boundary, endMs int, dur float64) events.Event {
		return events.Event{Kind: kind, Boundary: b, Time: at(endMs), DurationMs: dur, Outcome: events.OK}
	}
	evs := []events.Event{
		ev(events.KindMCPRequestReceived, events.BoundaryMCP, 0, 0),
		ev(events.KindPolicyDecided, events.BoundaryPolicy, 10, 0),
		ev(events.KindApprovalDecided, events.BoundaryApproval, 5010, 5000),
		ev(events.KindUpstreamResponse, events.BoundaryUpstream, 5220, 200),
		ev(events.KindToolCompleted, events.BoundaryTool, 5230, 215),
		ev(events.KindExecutorAudit, events.BoundaryExecutor, 5240, 5235),
		ev(events.KindMCPResponseSent, events.BoundaryMCP, 5250, 5250),
	}
	spans := Waterfall(evs)
	if len(spans) != 5 || spans[0].Kind != events.KindMCPResponseSent || spans[0].StartMs != 0 || spans[0].Ms != 5250 {
		t.Fatalf("waterfall %+v", spans)
	}
	var wait Span
	for _, s := range spans {
		if s.Boundary == events.BoundaryApproval {
			wait = s
		}
	}
	if wait.StartMs != 10 || wait.Ms != 5000 {
		t.Fatalf("the operator's wait as its own bar: %+v", wait)
	}
	self := SelfTime(spans)
	want := map[string]float64{"approval": 5000, "upstream": 200, "tool": 15, "executor": 20, "mcp": 15}
	total := 0.0
	for b, ms := range self {
		total += ms
		if math.Abs(ms-want[b]) > 1e-6 {
			t.Errorf("%s: %v ms, want %v (all: %v)", b, ms, want[b], self)
		}
	}
	if math.Abs(total-5250) > 1e-6 {
		t.Fatalf("the boundaries add up to %v ms, the request took 5250", total)
	}
	if r := Judge(events.ID{}, evs); r.Durations["upstream"] != self["upstream"] || len(r.Spans) != 5 {
		t.Fatalf("Judge: %v %d spans", r.Durations, len(r.Spans))
	}
}
