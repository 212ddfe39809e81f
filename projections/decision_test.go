package projections

import (
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/replay"
)

// F9: an operator's denial is the run's verdict at the approval, not at
// the executor's step after it.
func TestOperatorDenialIsJudgedAtTheApproval(t *testing.T) {
	req := events.ID{1}
	evs := []events.Event{
		{Kind: events.KindMCPRequestReceived, Boundary: events.BoundaryMCP, Outcome: events.OK, Attrs: events.A(events.AttrMethod, "tools/call")},
		{Kind: events.KindApprovalRequested, Boundary: events.BoundaryApproval, Outcome: events.Pending},
		Decision(Approval{ID: events.ID{2}.String(), RequestID: req}, events.Deny, "operator:alice", "not now", time.Time{}),
		{Kind: events.KindExecutorAudit, Boundary: events.BoundaryExecutor, Outcome: events.Denied, Code: events.CodeApprovalDenied},
		{Kind: events.KindMCPResponseSent, Boundary: events.BoundaryMCP, Outcome: events.Denied, Code: events.CodeApprovalDenied},
	}
	var f replay.Fold
	for i := range evs {
		e := evs[i]
		e.Seq = uint64(i + 1)
		if e.Boundary == "" {
			info, _ := events.Lookup(e.Kind)
			e.Boundary = info.Boundary
		}
		f.Add(&e)
	}
	status, v := f.Judgement()
	if status != replay.StatusDenied || v.Boundary != events.BoundaryApproval || v.Code != events.CodeApprovalDenied || v.Message != "not now" {
		t.Fatalf("status %s, verdict %+v: want denied at the approval with the operator's reason", status, v)
	}
}
