package executor

import (
	"context"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Pending is a tool call waiting for an operator's decision.
type Pending struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	RequestID events.ID `json:"requestId"`
	ArgsHash  string    `json:"argsHash"`
	Args      string    `json:"args"`
	Deadline  time.Time `json:"deadline"`
}

// Ranger reads the log in order from a sequence number.
type Ranger interface {
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
}

// PendingApprovals scans the log for approval requests with no decision
// whose deadline has not passed, oldest first.
// TODO(projections): read this from an approvals projection instead of a scan.
func PendingApprovals(ctx context.Context, log Ranger, now time.Time) ([]Pending, error) {
	open := map[string]Pending{}
	var order []string
	for from := uint64(1); ; {
		evs, next, err := log.Range(ctx, from, 2048)
		if err != nil {
			return nil, err
		}
		for _, e := range evs {
			switch e.Kind {
			case events.KindApprovalRequested:
				deadline, _ := time.Parse(time.RFC3339Nano, e.Attrs[AttrDeadline])
				id := e.Attrs[AttrApprovalID]
				open[id] = Pending{ID: id, Tool: e.Attrs[AttrTool], RequestID: e.RequestID,
					ArgsHash: e.Attrs[AttrArgsHash], Args: e.Attrs["args"], Deadline: deadline}
				order = append(order, id)
			case events.KindApprovalDecided:
				delete(open, e.Attrs[AttrApprovalID])
			}
		}
		if len(evs) == 0 {
			break
		}
		from = next
	}
	out := []Pending{}
	for _, id := range order {
		if p, ok := open[id]; ok && p.Deadline.After(now) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Decision is the event that answers p: decision is Approve or Deny, bound
// to the arguments hash p was shown with.
func Decision(p Pending, decision, by, reason string) events.Event {
	return events.Event{Kind: events.KindApprovalDecided, RequestID: p.RequestID, Outcome: events.OK,
		Attrs: map[string]string{AttrApprovalID: p.ID, AttrDecision: decision,
			AttrArgsHash: p.ArgsHash, "by": by, AttrReason: reason, AttrTool: p.Tool}}
}
