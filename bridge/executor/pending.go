package executor

import (
	"context"
	"crypto/sha256"
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
// to the arguments hash p was shown with. Its id is DecisionID(p.ID), so
// the log (which keeps one event per id) holds at most one decision per
// approval, whoever decides and however many try at once.
func Decision(p Pending, decision, by, reason string) events.Event {
	id, _ := events.ParseID(p.ID)
	return events.Event{ID: DecisionID(id), Kind: events.KindApprovalDecided, RequestID: p.RequestID, Outcome: events.OK,
		Attrs: map[string]string{AttrApprovalID: p.ID, AttrDecision: decision,
			AttrArgsHash: p.ArgsHash, "by": by, AttrReason: reason, AttrTool: p.Tool}}
}

// DecisionID is the event id of approval's decision: the approval id's
// time and entropy derived from it.
func DecisionID(approval events.ID) events.ID {
	sum := sha256.Sum256(append([]byte("tracebridge approval decision "), approval[:]...))
	var id events.ID
	copy(id[:6], approval[:6])
	copy(id[6:], sum[:10])
	return id
}

// Decided returns the decision the log holds for approval, if any.
func Decided(evs []events.Event, approval string) (events.Event, bool) {
	for _, e := range evs {
		if e.Kind == events.KindApprovalDecided && e.Attrs[AttrApprovalID] == approval {
			return e, true
		}
	}
	return events.Event{}, false
}

// Won reports whether the decision the log holds is ev (the one the
// caller emitted), not another decider's.
func Won(held, ev events.Event) bool {
	return held.ID == ev.ID && held.Attrs[AttrDecision] == ev.Attrs[AttrDecision] &&
		held.Attrs["by"] == ev.Attrs["by"] && held.Attrs[AttrReason] == ev.Attrs[AttrReason]
}

// PastTense names a decision once taken: approved, denied.
func PastTense(decision string) string {
	if decision == Deny {
		return "denied"
	}
	return decision + "d"
}
