package projections

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Viewer answers queries from the hub's projections (a hub.Node).
type Viewer interface {
	View(ctx context.Context, q Query) ([]json.RawMessage, error)
}

// MaxPending is how many waiting calls PendingApprovals lists at most.
const MaxPending = 1000

// PendingApprovals lists the tool calls waiting for a decision whose
// deadline has not passed, oldest first, from the approvals projection.
func PendingApprovals(ctx context.Context, log Viewer, now time.Time) ([]Approval, error) {
	all, err := Read[Approval](ctx, log, Query{View: ViewApprovals, Status: ApprovalPending, Limit: MaxPending})
	if err != nil {
		return nil, err
	}
	out := []Approval{}
	for i := len(all) - 1; i >= 0; i-- { // the view lists newest first
		if all[i].Deadline.After(now) {
			out = append(out, all[i])
		}
	}
	if pr, ok := log.(events.PayloadReader); ok {
		for i := range out {
			if err := out[i].WholeArgs(ctx, pr); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// WholeArgs replaces a.Args, when the payload store keeps them (longer
// than an attribute), with the arguments themselves: an operator decides
// on what the call would send, whole.
func (a *Approval) WholeArgs(ctx context.Context, r events.PayloadReader) error {
	args, err := events.ResolveValue(ctx, r, a.Args)
	if err != nil {
		return fmt.Errorf("approval %s: its arguments: %w", a.ID, err)
	}
	a.Args = args
	return nil
}

// Decision is the event that answers p: decision is events.Approve or events.Deny, bound
// to the arguments hash p was shown with. Its id is DecisionID(p.ID), so
// the log (which keeps one event per id) holds at most one decision per
// approval, whoever decides and however many try at once. Decided at now
// (zero: no time), it carries the wait since p was requested as its
// duration, as the bridge's own decisions (a timeout) do: runs, replay and
// the UI show the operator's wait.
func Decision(p Approval, decision, by, reason string, now time.Time) events.Event {
	id, _ := events.ParseID(p.ID)
	e := events.Event{ID: DecisionID(id), Kind: events.KindApprovalDecided, RequestID: p.RequestID, Outcome: events.OK,
		Attrs: events.A(events.AttrApprovalID, p.ID, events.AttrDecision, decision, events.AttrArgsHash, p.ArgsHash, "by", by, events.AttrReason, reason, events.AttrTool, p.Tool)}
	if decision == events.Deny { // the run's verdict is the operator's, at the approval
		e.Outcome, e.Code = events.Denied, events.CodeApprovalDenied
	}
	if !now.IsZero() && !p.Requested.IsZero() && now.After(p.Requested) {
		e.Time = now.UTC()
		e.DurationMs = events.Ms(now.Sub(p.Requested))
	}
	return e
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
		if e.Kind == events.KindApprovalDecided && e.Attrs.Get(events.AttrApprovalID) == approval {
			return e, true
		}
	}
	return events.Event{}, false
}

// Won reports whether the decision the log holds is ev (the one the
// caller emitted), not another decider's.
func Won(held, ev events.Event) bool {
	return held.ID == ev.ID && held.Attrs.Get(events.AttrDecision) == ev.Attrs.Get(events.AttrDecision) &&
		held.Attrs.Get(events.AttrBy) == ev.Attrs.Get(events.AttrBy) && held.Attrs.Get(events.AttrReason) == ev.Attrs.Get(events.AttrReason)
}

// PastTense names a decision once taken: approved, denied.
func PastTense(decision string) string {
	if decision == events.Deny {
		return "denied"
	}
	return decision + "d"
}
