package replay

import (
	"cmp"
	"slices"

	"github.com/tracebridge/tracebridge/events"
)

// Statuses of a run.
const (
	StatusOK         = "ok"
	StatusFailed     = "failed"
	StatusDenied     = "denied"
	StatusIncomplete = "incomplete"
)

// Verdict is the judgement of a run: the first missing or failing step,
// its code, what it means and what to do. Its fields are empty (null in
// JSON) when the run succeeded.
type Verdict struct {
	Boundary events.Boundary
	Kind     string
	Code     events.Code
	Outcome  events.Outcome
	Message  string
	Action   string
	Seq      uint64 // of the failing event; 0 for a missing step
}

// Run is one request, reconstructed.
type Run struct {
	RequestID events.ID `json:"requestId"`
	SessionID events.ID `json:"sessionId,omitzero"`
	Tool      string    `json:"tool,omitempty"`
	Method    string    `json:"method,omitempty"`
	User      string    `json:"user,omitempty"` // who made it, as the front door authenticated them ([auth])
	Status    string    `json:"status"`
	Verdict   Verdict   `json:"verdict"`
	Later     *Verdict  `json:"later,omitempty"`  // what happened to the call's proposal after it was answered
	WaitMs    float64   `json:"waitMs,omitempty"` // time spent waiting for an operator's approval
	// Durations are each boundary's time with every instant counted once
	// (SelfTime), from Spans.
	Durations map[string]float64 `json:"boundaryMs"`
	Spans     []Span             `json:"spans,omitempty"` // the waterfall
	Events    []events.Event     `json:"events"`
}

// Judge builds the run of one request from its events (in seq order).
func Judge(req events.ID, evs []events.Event) Run {
	r := Run{RequestID: req, Events: evs}
	if evs == nil {
		r.Events = []events.Event{}
	}
	var f Fold
	for i := range evs {
		f.Add(&evs[i])
	}
	r.SessionID, r.Tool, r.Method, r.User = f.SessionID, f.Tool, f.Method, f.User
	r.Status, r.Verdict = f.Judgement()
	r.Events = Causal(r.Events)
	r.Spans = Waterfall(r.Events)
	r.Durations = SelfTime(r.Spans)
	r.Later, r.WaitMs = f.Later, f.WaitMs
	return r
}

// Causal orders a run's events as they happened: by time, then by seq. The
// log's seq order is the order the hub committed them, and the processes of
// a run (the bridge, the host, an operator) send theirs in batches of their
// own, so a host's host.request.received can be committed before the
// bridge's tool.started that caused it. One machine's clock orders them as
// they happened; equal times (a re-drive's standing clock) keep seq order.
// The judgement itself folds in seq order, as the runs projection does.
// Then the pipe's own causality holds whatever the clocks say (a clock
// step, a re-drive's standing clock): the host's events of an operation
// come after the pipe.request.sent that carried it.
func Causal(evs []events.Event) []events.Event {
	out := slices.Clone(evs)
	slices.SortStableFunc(out, func(a, b events.Event) int {
		if c := a.Time.Compare(b.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Seq, b.Seq)
	})
	sentAt := map[events.ID]int{}
	for i := range out {
		if out[i].Kind == events.KindPipeRequestSent && !out[i].OperationID.IsZero() {
			if _, seen := sentAt[out[i].OperationID]; !seen {
				sentAt[out[i].OperationID] = i
			}
		}
	}
	if len(sentAt) == 0 {
		return out
	}
	ordered := make([]events.Event, 0, len(out))
	held := map[events.ID][]events.Event{}
	for i, e := range out {
		if at, ok := sentAt[e.OperationID]; ok && e.Boundary == events.BoundaryHost && at > i {
			held[e.OperationID] = append(held[e.OperationID], e) // the host answered before the request was sent, by the clock
			continue
		}
		ordered = append(ordered, e)
		if e.Kind == events.KindPipeRequestSent {
			ordered = append(ordered, held[e.OperationID]...)
			delete(held, e.OperationID)
		}
	}
	return ordered
}
