package replay

import (
	"slices"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

func e(kind string, outcome events.Outcome, code events.Code, attrs map[string]string) events.Event {
	info, _ := events.Lookup(kind)
	return events.Event{Kind: kind, Boundary: info.Boundary, Outcome: outcome, Code: code, Attrs: events.AttrsOf(attrs), DurationMs: 1}
}

func TestVerdicts(t *testing.T) {
	req := events.NewID()
	tests := []struct {
		name     string
		evs      []events.Event
		status   string
		boundary events.Boundary
		code     events.Code
		action   bool
	}{
		{"ok", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", map[string]string{"tool": "t", "method": "tools/call"}),
			e(events.KindToolCompleted, events.OK, "", nil), e(events.KindMCPResponseSent, events.OK, "", nil)}, StatusOK, "", "", false},
		{"denied", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil),
			e(events.KindPolicyDecided, events.Denied, events.CodePolicyDenied, map[string]string{"reason": "capability x not granted"}),
			e(events.KindMCPResponseSent, events.Denied, events.CodePolicyDenied, nil)}, StatusDenied, events.BoundaryPolicy, events.CodePolicyDenied, true},
		{"pipe", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil), e(events.KindPipeAttempt, events.OK, "", nil),
			e(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, map[string]string{"error": "no host"}),
			e(events.KindMCPResponseSent, events.Unavailable, events.CodePipeUnavailable, nil)}, StatusFailed, events.BoundaryPipe, events.CodePipeUnavailable, true},
		{"crash mid-request", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil), e(events.KindToolStarted, events.OK, "", nil)},
			StatusIncomplete, events.BoundaryTool, "", true},
		{"unknown request", nil, StatusIncomplete, "none", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Judge(req, tc.evs)
			if r.Status != tc.status || r.Verdict.Boundary != tc.boundary || r.Verdict.Code != tc.code || (r.Verdict.Action != "") != tc.action {
				t.Fatalf("run %+v", r)
			}
		})
	}
	if r := Judge(req, tests[0].evs); r.Tool != "t" || r.Method != "tools/call" || r.Durations["mcp"] != 1 { // three 1 ms spans over the same instant: 1 ms, not 3
		t.Fatalf("run fields %+v", r)
	}
}

// A call answered fine whose proposal later met Drift (an operator's apply)
// is ok: the Drift is its proposal's later fate; the call's duration ends at
// its answer and says how long it waited for an approval.
func TestCallOutcomeApartFromItsProposalsFate(t *testing.T) {
	req := events.NewID()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	evs := []events.Event{
		{Seq: 1, Time: at(0), Kind: events.KindMCPRequestReceived, Boundary: events.BoundaryMCP, Outcome: events.OK, Attrs: events.A("method", "tools/call")},
		{Seq: 2, Time: at(1), Kind: events.KindApprovalRequested, Boundary: events.BoundaryApproval, Outcome: events.Pending},
		{Seq: 3, Time: at(501), Kind: events.KindApprovalDecided, Boundary: events.BoundaryApproval, Outcome: events.OK, DurationMs: 500},
		{Seq: 4, Time: at(510), Kind: events.KindMCPResponseSent, Boundary: events.BoundaryMCP, Outcome: events.OK},
		{Seq: 5, Time: at(90000), Kind: events.KindProposalFailed, Boundary: events.BoundaryProposal, Outcome: events.Error, Code: events.CodeDrift, Attrs: events.A("error", "a.go changed")},
	}
	run := Judge(req, evs)
	if run.Status != StatusOK || run.Later == nil || run.Later.Code != events.CodeDrift || run.WaitMs != 500 {
		t.Fatalf("run: status %s later %+v wait %v", run.Status, run.Later, run.WaitMs)
	}
	var f Fold
	for i := range evs {
		f.Add(&evs[i])
	}
	if s := f.Summary(); s.DurationMs != 510 || s.WaitMs != 500 || s.Later == nil {
		t.Fatalf("summary: %+v", s)
	}
}

// A run's events read in the order they happened, whatever order the hub
// committed the processes' batches in; equal times keep seq order.
func TestEventsReadInTheOrderTheyHappened(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	evs := []events.Event{
		{Seq: 1, Time: t0, Kind: events.KindMCPRequestReceived},
		{Seq: 2, Time: t0.Add(3 * time.Millisecond), Kind: events.KindHostReceived}, // the host's batch, committed first
		{Seq: 3, Time: t0.Add(1 * time.Millisecond), Kind: events.KindToolStarted},
		{Seq: 4, Time: t0.Add(2 * time.Millisecond), Kind: events.KindPipeRequestSent},
		{Seq: 5, Time: t0.Add(2 * time.Millisecond), Kind: events.KindPipeConnected},
	}
	run := Judge(events.NewID(), evs)
	var got []uint64
	for _, e := range run.Events {
		got = append(got, e.Seq)
	}
	if want := []uint64{1, 3, 4, 5, 2}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// The pipe's causality holds whatever the clocks say: a host event of an
// operation is read after the pipe.request.sent that carried it, even when
// the clock says otherwise (a step, a re-drive's standing clock); other
// events keep their places.
func TestHostEventsFollowTheirRequest(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	op := events.NewID()
	evs := []events.Event{
		{Seq: 1, Time: t0, Kind: events.KindMCPRequestReceived, Boundary: events.BoundaryMCP},
		{Seq: 2, Time: t0, Kind: events.KindHostReceived, Boundary: events.BoundaryHost, OperationID: op},
		{Seq: 3, Time: t0, Kind: events.KindHostResponseSent, Boundary: events.BoundaryHost, OperationID: op},
		{Seq: 4, Time: t0, Kind: events.KindToolStarted, Boundary: events.BoundaryTool},
		{Seq: 5, Time: t0, Kind: events.KindPipeRequestSent, Boundary: events.BoundaryPipe, OperationID: op},
		{Seq: 6, Time: t0, Kind: events.KindPipeResponseReceived, Boundary: events.BoundaryPipe, OperationID: op},
	}
	var got []uint64
	for _, e := range Causal(evs) {
		got = append(got, e.Seq)
	}
	if want := []uint64{1, 4, 5, 2, 3, 6}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

// A run that is an operator's pipe command is named by its command, as an
// MCP run by its method (runs --kind other showed "-"); its method stays
// empty (that is what makes it another kind than an MCP client's).
func TestAnOperatorsRunIsNamedByItsCommand(t *testing.T) {
	evs := []events.Event{
		{Seq: 1, Kind: events.KindPipeAttempt, Boundary: events.BoundaryPipe, Outcome: events.OK, Attrs: events.A(events.AttrCommand, "proposals.decide")},
		{Seq: 2, Kind: events.KindPipeRequestSent, Boundary: events.BoundaryPipe, Outcome: events.OK, Attrs: events.A(events.AttrCommand, "proposals.decide")},
	}
	var f Fold
	for i := range evs {
		f.Add(&evs[i])
	}
	if s := f.Summary(); s.Command != "proposals.decide" || s.Method != "" {
		t.Fatalf("the operator's run: method %q, command %q", s.Method, s.Command)
	}
	mcp := []events.Event{{Seq: 1, Kind: events.KindMCPRequestReceived, Boundary: events.BoundaryMCP, Outcome: events.OK, Attrs: events.A(events.AttrMethod, "tools/call")},
		{Seq: 2, Kind: events.KindPipeAttempt, Boundary: events.BoundaryPipe, Outcome: events.OK, Attrs: events.A(events.AttrCommand, "get_selection")}}
	var g Fold
	for i := range mcp {
		g.Add(&mcp[i])
	}
	if s := g.Summary(); s.Method != "tools/call" || s.Command != "" {
		t.Fatalf("an MCP run: method %q, command %q", s.Method, s.Command)
	}
}
