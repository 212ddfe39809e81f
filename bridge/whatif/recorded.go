// Package whatif re-decides recorded tool calls under a candidate
// configuration, without running anything: `tracebridge policy test` (what
// a policy change would have done to the calls in the log) and `policy
// explain` (which rules a recorded call met).
package whatif

import (
	"context"
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/policy"
	"github.com/tracebridge/tracebridge/projections"
)

// Call is one recorded tool call as the policy saw it: the tool's
// descriptor, what the rules see of the call, and what was decided then.
type Call struct {
	RequestID  events.ID           `json:"requestId"`
	Time       time.Time           `json:"time"`
	Descriptor executor.Descriptor `json:"-"`
	Input      policy.Input        `json:"-"`
	Was        executor.Evaluation `json:"was"`
	// Answer is an upstream's answer to the call as the log kept it
	// (redacted; "" for the bridge's own tools), ResultWas the guard's
	// action on it then ("" when it found nothing).
	Answer    string `json:"-"`
	ResultWas string `json:"-"`
}

// Log is what the calls are read from: the events in seq order, each
// payload whole. A hub.Node is one.
type Log interface {
	events.PayloadReader
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
}

// recordedEnvelope is what an audit envelope says of the policy's part.
type recordedEnvelope struct {
	Descriptor *executor.Descriptor `json:"descriptor"`
	Policy     *struct {
		Allowed bool     `json:"allowed"`
		Reason  string   `json:"reason"`
		Rule    string   `json:"rule"`
		Effect  string   `json:"effect"`
		Matched []string `json:"matched"`
		Version string   `json:"version"`
	} `json:"policy"`
	Approval *struct {
		Required bool `json:"required"`
	} `json:"approval"`
	Args string      `json:"args"`
	Code events.Code `json:"code"`
}

// partial is a call being read: its steps arrive one by one.
type partial struct {
	client    string
	transport string
	user      identity.User // as the request's events name it (tagged by the front door)
	session   events.ID
	time      time.Time
	env       *recordedEnvelope
	args      json.RawMessage
	answer    string
	judged    string
}

// Calls reads the tool calls recorded since since (zero: all) and gives
// each to fn, in the order they were answered. A call the policy did not
// decide (an unknown tool, invalid arguments) is left out. annotations
// maps a tool id to its MCP annotations (JSON), for the tools whose
// descriptors the log pins (Annotations).
func Calls(ctx context.Context, log Log, since time.Time, annotations map[string]string, fn func(Call) error) error {
	s := newScan(log, since, annotations, fn)
	if err := s.log(ctx, log); err != nil {
		return err
	}
	return s.end()
}

// scan follows the events of calls, in seq order, to each call's end.
type scan struct {
	payloads    events.PayloadReader
	since       time.Time
	annotations map[string]string
	fn          func(Call) error
	open        map[events.ID]*partial
	// Unreadable counts the calls left out because their envelope or
	// arguments could not be read back (a payload an archive no longer
	// holds).
	Unreadable int
}

func newScan(payloads events.PayloadReader, since time.Time, annotations map[string]string, fn func(Call) error) *scan {
	return &scan{payloads: payloads, since: since, annotations: annotations, fn: fn, open: map[events.ID]*partial{}}
}

// log follows every event of log, in seq order.
func (s *scan) log(ctx context.Context, log Log) error {
	for from := uint64(1); ; {
		evs, next, err := log.Range(ctx, from, 4096)
		if err != nil || len(evs) == 0 {
			return err
		}
		for i := range evs {
			if err := s.step(ctx, &evs[i]); err != nil {
				return err
			}
		}
		from = next
	}
}

// end decides the calls never answered (a crash) on what their envelope
// says.
func (s *scan) end() error {
	for req, p := range s.open {
		if p.env != nil {
			if err := finish(req, p, s.annotations, s.fn); err != nil {
				return err
			}
		}
	}
	clear(s.open)
	return nil
}

func (s *scan) step(ctx context.Context, e *events.Event) error {
	open, since := s.open, s.since
	switch e.Kind {
	case events.KindMCPRequestReceived:
		if e.Attrs.Get(events.AttrMethod) == "tools/call" && !e.Time.Before(since) {
			open[e.RequestID] = &partial{transport: e.Attrs.Get("transport"), user: identity.FromAttrs(e.Attrs.Get)}
		}
	case events.KindExecutorStarted:
		if e.Time.Before(since) {
			return nil
		}
		p := open[e.RequestID]
		if p == nil {
			p = &partial{}
			open[e.RequestID] = p
		}
		p.client, p.session, p.time = e.Attrs.Get(events.AttrClient), e.SessionID, e.Time
	case events.KindExecutorAudit:
		p := open[e.RequestID]
		if p == nil {
			return nil
		}
		raw, err := events.ResolveValue(ctx, s.payloads, e.Attrs.Get(events.AttrEnvelope))
		if err != nil {
			s.Unreadable++
			delete(open, e.RequestID)
			return nil
		}
		var env recordedEnvelope
		if json.Unmarshal([]byte(raw), &env) != nil || env.Policy == nil || env.Descriptor == nil {
			delete(open, e.RequestID) // not decided by the policy, or not readable
			return nil
		}
		p.env = &env
	case events.KindUpstreamResponse:
		if p := open[e.RequestID]; p != nil && e.Attrs.Get("isError") != "true" {
			if raw, err := events.ResolveValue(ctx, s.payloads, e.Attrs.Get("answer")); err == nil {
				p.answer = answerResult(raw)
			}
		}
	case events.KindGuardResult:
		if p := open[e.RequestID]; p != nil {
			p.judged = e.Attrs.Get("action")
		}
	case events.KindMCPResponseSent:
		p := open[e.RequestID]
		if p == nil || p.env == nil {
			return nil
		}
		delete(open, e.RequestID)
		raw, err := events.ResolveValue(ctx, s.payloads, e.Attrs.Get(events.AttrParams))
		if err != nil {
			raw = "" // the envelope's arguments, when they are whole there
		}
		var params struct {
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal([]byte(raw), &params) == nil {
			p.args = params.Arguments
		}
		return finish(e.RequestID, p, s.annotations, s.fn)
	}
	return nil
}

func finish(req events.ID, p *partial, annotations map[string]string, fn func(Call) error) error {
	env := p.env
	args := p.args
	if len(args) == 0 && json.Valid([]byte(env.Args)) { // short arguments are whole in the envelope
		args = json.RawMessage(env.Args)
	}
	c := Call{RequestID: req, Time: p.time, Descriptor: *env.Descriptor, Answer: p.answer, ResultWas: p.judged}
	c.Input = Input(c.Descriptor, args, p.client, p.time, annotations[c.Descriptor.ID])
	c.Input.Caller = policy.CallerOf(p.transport)
	c.Input.Caller.User = p.user
	if !p.session.IsZero() {
		c.Input.Session = p.session.String()
	}
	c.Was = executor.Evaluation{Verdict: executor.VerdictAllowed, Rule: env.Policy.Rule, Effect: env.Policy.Effect, Matched: env.Policy.Matched,
		Reason: env.Policy.Reason, Version: env.Policy.Version}
	switch {
	case !env.Policy.Allowed:
		c.Was.Verdict, c.Was.Code = executor.VerdictDenied, env.Code
	case env.Approval != nil && env.Approval.Required:
		c.Was.Verdict = executor.VerdictGated
	}
	return fn(c)
}

// Input is what the rules see of a recorded call of d: its arguments (as
// recorded: redacted), client, time, and annotations (JSON; "" when the
// log does not pin the tool: a built-in's read-only hint from its side
// effects).
func Input(d executor.Descriptor, args json.RawMessage, client string, at time.Time, annotations string) policy.Input {
	flags := projections.AnnotationFlags(annotations)
	if annotations == "" { // a built-in's, from its side effects, as the MCP server lists it
		flags["readOnlyHint"] = !d.SideEffects
	}
	return policy.NewInput(policy.Tool{ID: d.ID, Server: d.Server(), Name: d.Name, Annotations: flags}, args, client, "", policy.Caller{}, at)
}

// Pinned is what the log pins of each upstream tool, by its id in the
// catalog, read once: its annotations (JSON) for the rules, its input
// schema for the guard's undeclared-property rule.
func Pinned(ctx context.Context, log projections.Viewer) (annotations map[string]string, schemas map[string]json.RawMessage, err error) {
	pins, err := projections.Read[projections.Pin](ctx, log, projections.Query{View: projections.ViewPins, Limit: 1 << 20})
	if err != nil {
		return nil, nil, err
	}
	annotations, schemas = make(map[string]string, len(pins)), make(map[string]json.RawMessage, len(pins))
	for _, p := range pins {
		if a := p.Annotations(); a != "" {
			annotations[p.Name] = a
		}
		if sch := p.InputSchema(); len(sch) > 0 {
			schemas[p.Name] = sch
		}
	}
	return annotations, schemas, nil
}

// answerResult is the tools/call result in an upstream's recorded answer:
// the result itself, or the "result" of a JSON-RPC response ("" when
// neither).
func answerResult(raw string) string {
	var rpc struct {
		Result json.RawMessage `json:"result"`
	}
	if json.Unmarshal([]byte(raw), &rpc) == nil && len(rpc.Result) > 0 {
		return string(rpc.Result)
	}
	if json.Valid([]byte(raw)) {
		return raw
	}
	return ""
}
