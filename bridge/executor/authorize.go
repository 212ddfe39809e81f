package executor

import (
	"context"

	"github.com/tracebridge/tracebridge/events"
)

// Authorize is the policy step for what is not a tool call but reaches the
// same things: a resource read (trace://runs/… reads what trace_replay
// does; an upstream's resources), an upstream's prompt. id names it (an
// exposed prompt name, a URI) and is matched against policy.deny like a
// tool id; caps are the capabilities it needs. The decision is recorded as
// policy.decided of request req, and a denial is an *events.Err with the
// code a tool call would get.
func (x *Executor) Authorize(_ context.Context, req events.ID, id string, caps []string) error {
	r := x.rule.Load()
	d := r.policy.decideTool(&Descriptor{ID: id, Capabilities: caps}) // rules are on a tool call's arguments
	e := events.Event{Kind: events.KindPolicyDecided, RequestID: req, Outcome: events.OK,
		Attrs: events.A(events.AttrTool, id, events.AttrReason, d.Reason)}
	if !d.Allowed {
		e.Outcome, e.Code = events.Denied, d.Code
	}
	x.opts.Emitter.Emit(e)
	if !d.Allowed {
		return events.Errorf(e.Code, "%s", d.Reason)
	}
	return nil
}
