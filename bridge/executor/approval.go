package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// RequestReader reads one request's events back from the log: how the
// executor sees an operator's decision, whichever process wrote it.
type RequestReader interface {
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
}

// ArgsHash is the hash an approval is bound to: SHA-256 of the arguments
// re-encoded canonically (sorted keys), so whitespace or key order cannot
// make approved arguments look different.
func ArgsHash(args json.RawMessage) string {
	var v any
	canon := []byte("null")
	if len(args) > 0 && json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// notifier wakes a waiting call when its decision is committed (a
// hub.Node); without one, or when it fails, the call polls.
type notifier interface {
	Notify(ctx context.Context, req events.ID, kind string) (<-chan struct{}, func(), error)
}

// safetyPoll is how often a call woken by subscription still looks, in
// case a notice was lost (a hub changed hands).
const safetyPoll = 2 * time.Second

// awaitDecision waits for an approval.decided naming approvalID until
// deadline: woken by the hub when one is committed for the request, and
// looking every `every` (safetyPoll when woken by subscription). It returns
// the decision event, or ok=false on timeout.
func awaitDecision(ctx context.Context, log RequestReader, req, approvalID events.ID, members []string, deadline time.Time, every time.Duration,
	now func() time.Time, after func(time.Duration) <-chan time.Time) (events.Event, bool, error) {
	var wake <-chan struct{}
	if n, ok := log.(notifier); ok {
		if ch, stop, err := n.Notify(ctx, req, events.KindApprovalDecided); err == nil {
			defer stop()
			wake, every = ch, max(every, safetyPoll)
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		evs, err := log.ByRequest(ctx, req)
		if err == nil {
			if e, ok := decisionOf(evs, approvalID, members); ok {
				return e, true, nil
			}
		}
		wait := deadline.Sub(now())
		if wait <= 0 {
			return events.Event{}, false, nil
		}
		select {
		case <-ctx.Done():
			return events.Event{}, false, ctx.Err()
		case <-wake:
		case <-t.C:
		case <-after(wait):
			// The deadline passed; the next look sees a decision that
			// landed at the last moment, or times out.
			deadline = now()
		}
	}
}

// decisionOf finds the decision of approvalID among a request's events. In
// cluster mode every event names the member that published it (its origin,
// which the cluster's permissions and the collectors hold to the member's
// credentials): a decision counts only when published by the member whose
// call asked for it, or by one of members ([approval] decider_members: the
// members allowed to decide for every origin), whatever name it claims to
// be "by". Another member's is not taken (the call waits, and times out
// denied).
func decisionOf(evs []events.Event, approvalID events.ID, members []string) (events.Event, bool) {
	id := approvalID.String()
	asker := ""
	for _, e := range evs {
		if e.Kind == events.KindApprovalRequested && e.Attrs.Get(events.AttrApprovalID) == id {
			asker = e.Attrs.Get(events.AttrOriginUser)
		}
	}
	for _, e := range evs {
		if e.Kind != events.KindApprovalDecided || e.Attrs.Get(events.AttrApprovalID) != id {
			continue
		}
		if by := e.Attrs.Get(events.AttrOriginUser); asker != "" && by != asker && !slices.Contains(members, by) {
			continue
		}
		return e, true
	}
	return events.Event{}, false
}

// approvalProgressEvery is how often a call waiting for an operator tells
// its client so, when the client asked for progress: a client that
// restarts its request timeout on progress keeps waiting.
const approvalProgressEvery = 2 * time.Second

// progressWhileWaiting reports progress to the client while the call waits
// for an operator's decision (none when the client asked for no
// progress); the returned func stops it.
func (c *call) progressWhileWaiting(deadline time.Time) (stop func()) {
	if c.inv.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(approvalProgressEvery)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-t.C:
				c.inv.Progress(float64(n), 0, fmt.Sprintf("waiting for an operator's approval until %s: tracebridge approvals approve %s",
					deadline.UTC().Format(time.RFC3339), c.ask))
			}
		}
	}()
	return func() { close(done); <-finished }
}
