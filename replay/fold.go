package replay

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// Fold judges a run one event at a time. Judge and the runs projection both
// use it, so a replay and the projection always agree. Its JSON form is the
// projection's stored state.
type Fold struct {
	RequestID events.ID `json:"requestId"`
	SessionID events.ID `json:"sessionId,omitzero"`
	Tool      string    `json:"tool,omitempty"`
	Method    string    `json:"method,omitempty"`
	Start     time.Time `json:"start,omitzero"`
	End       time.Time `json:"end,omitzero"`
	FirstSeq  uint64    `json:"firstSeq,omitempty"`
	LastSeq   uint64    `json:"lastSeq,omitempty"`
	Events    int       `json:"events"`
	Failure   *Verdict  `json:"failure,omitempty"` // the first failing step
	// Aside are failures of upstream servers other than the call's (or of
	// a server not known yet to be the call's), first per server: a run
	// that started every server is not judged by another's (issue 46 B2).
	Aside     map[string]*Verdict `json:"aside,omitempty"`
	Open      []string            `json:"open,omitempty"` // kinds of the steps opened and not yet closed
	LastKind  string              `json:"lastKind,omitempty"`
	LastBound events.Boundary     `json:"lastBoundary,omitempty"`
	MCP       bool                `json:"mcp,omitempty"` // the run came from an MCP request
	// Command is the pipe command a run that is not an MCP request began
	// with (an operator's `proposals approve`, `focus`).
	Command string `json:"command,omitempty"`
	// Client is the MCP client that sent the request (clientInfo
	// name/version); Server the upstream server the call went to.
	Client string `json:"client,omitempty"`
	Server string `json:"server,omitempty"`
	// User is who made the request, as the front door authenticated them
	// ([auth]): their name, else their subject.
	User string `json:"user,omitempty"`
	// Answered is when the MCP response was sent: the call's own end.
	Answered time.Time `json:"answered,omitzero"`
	// WaitMs is the time the call waited for an operator's approval.
	WaitMs float64 `json:"waitMs,omitempty"`
	// Later is what happened to the call's proposal after the call was
	// answered (an apply that met Drift): not the call's own outcome.
	Later *Verdict `json:"later,omitempty"`
}

// noteServer keeps the server a call was for: its tool's (the executor's
// catalog step names it, also for a call refused before any upstream was
// reached); else the first upstream crossing's — not another server's
// start that the same run happened to cause.
func (f *Fold) noteServer(e *events.Event) {
	if src, ok := strings.CutPrefix(e.Attrs.Get("source"), "upstream:"); ok && e.Kind == events.KindExecutorCatalog {
		f.Server = src
	} else if f.Server == "" && e.Kind == events.KindUpstreamRequestSent {
		f.Server = e.Attrs.Get(events.AttrServer)
	} else {
		return
	}
	// The call's own server failed before it was known to be the call's.
	if v := f.Aside[f.Server]; v != nil && (f.Failure == nil || v.Seq < f.Failure.Seq) {
		f.Failure = v
		delete(f.Aside, f.Server)
	}
}

// aside keeps v, a failure of another upstream server than the call's (or
// of one not known yet to be its), out of the verdict; it reports whether
// it did.
func (f *Fold) aside(e *events.Event, v *Verdict) bool {
	server := e.Attrs.Get(events.AttrServer)
	if e.Boundary != events.BoundaryUpstream || server == "" || server == f.Server {
		return false
	}
	if f.Aside == nil {
		f.Aside = map[string]*Verdict{}
	}
	if f.Aside[server] == nil {
		f.Aside[server] = v
	}
	return true
}

// Add folds the next event of the run (in seq order).
func (f *Fold) Add(e *events.Event) {
	if f.Events == 0 {
		f.RequestID, f.FirstSeq, f.Start = e.RequestID, e.Seq, e.Time
	}
	f.Events++
	f.LastSeq, f.End, f.LastKind, f.LastBound = e.Seq, e.Time, e.Kind, e.Boundary
	if f.SessionID.IsZero() {
		f.SessionID = e.SessionID
	}
	if f.Tool == "" {
		f.Tool = e.Attrs.Get(events.AttrTool)
	}
	if f.Method == "" {
		f.Method = e.Attrs.Get(events.AttrMethod)
	}
	if f.Events == 1 && e.Kind != events.KindMCPRequestReceived {
		// A run that is an operator's pipe command (proposals approve,
		// focus) is named by it, as an MCP run by its method.
		f.Command = e.Attrs.Get(events.AttrCommand)
	}
	if e.Kind == events.KindMCPRequestReceived {
		f.MCP = true
		f.Client = e.Attrs.Get(events.AttrClient)
		f.User = cmp.Or(e.Attrs.Get(identity.AttrName), e.Attrs.Get(identity.AttrSub))
	}
	f.noteServer(e)
	if e.Kind == events.KindMCPResponseSent && f.Answered.IsZero() {
		f.Answered = e.Time
	}
	if e.Kind == events.KindApprovalDecided {
		f.WaitMs += e.DurationMs
	}
	// Close the latest open step this kind closes, then open its own.
	for i := len(f.Open) - 1; i >= 0; i-- {
		if info, _ := events.Lookup(f.Open[i]); slices.Contains(info.ClosedBy, e.Kind) {
			f.Open = slices.Delete(f.Open, i, i+1)
			break
		}
	}
	if info, ok := events.Lookup(e.Kind); ok && len(info.ClosedBy) > 0 {
		f.Open = append(f.Open, e.Kind)
	}
	if e.Outcome.Failed() {
		msg := e.Attrs.Get(events.AttrError)
		if msg == "" {
			msg = e.Attrs.Get(events.AttrReason)
		}
		if msg == "" {
			msg = e.Kind + " ended " + string(e.Outcome)
		}
		v := &Verdict{Boundary: e.Boundary, Kind: e.Kind, Code: e.Code, Outcome: e.Outcome, Message: msg, Action: events.ActionFor(e.Code), Seq: e.Seq}
		switch {
		case f.aside(e, v):
		case !f.Answered.IsZero() && e.Boundary == events.BoundaryProposal:
			// The call returned; its proposal met this later (an operator's
			// apply): the proposal's fate, not the call's outcome.
			if f.Later == nil {
				f.Later = v
			}
		case f.Failure == nil:
			f.Failure = v
		}
	}
}

// Judgement is the run's status and verdict so far: the first failing step;
// else, for a run whose request was never answered, where it stopped; else
// the first step the expected chain opened and nobody closed.
func (f *Fold) Judgement() (string, Verdict) {
	if f.Failure != nil && f.Failure.Kind == events.KindMCPResponseSent {
		// The client was told a code no step of the call's own gave: the
		// cause is the upstream failure that carries it.
		var cause *Verdict
		for _, v := range f.Aside {
			if v.Code == f.Failure.Code && v.Code != "" && (cause == nil || v.Seq < cause.Seq) {
				cause = v
			}
		}
		if cause != nil {
			return statusOf(cause), *cause
		}
	}
	if f.Failure != nil {
		if f.Failure.Outcome == events.Denied {
			return StatusDenied, *f.Failure
		}
		return StatusFailed, *f.Failure
	}
	if f.Events == 0 {
		return StatusIncomplete, Verdict{Boundary: "none", Message: "no events were recorded for this request",
			Action: "check the request id (it is in every tool result's _meta[\"tracebridge/requestId\"]) and --data"}
	}
	if len(f.Open) == 0 {
		return StatusOK, Verdict{}
	}
	if slices.Contains(f.Open, events.KindMCPRequestReceived) || !f.MCP {
		return StatusIncomplete, Verdict{Boundary: f.LastBound, Kind: f.LastKind,
			Message: "the run stopped after " + string(f.LastBound) + " (" + f.LastKind + ") with no answer recorded; still open: " +
				strings.Join(f.Open, ", ") + ". It is still running, or the process ended mid-request",
			Action: "if it is not waiting for an approval, check the bridge's log file (logs/mcp-<pid>.log in the data dir) around this time"}
	}
	step := f.Open[0]
	info, _ := events.Lookup(step)
	return StatusFailed, Verdict{Boundary: info.Boundary, Kind: step, Code: events.CodeMissingStep,
		Message: "the request was answered but its " + string(info.Boundary) + " step (" + step + ") never closed; expected " + strings.Join(info.ClosedBy, " or "),
		Action:  events.ActionFor(events.CodeMissingStep)}
}

func statusOf(v *Verdict) string {
	if v.Outcome == events.Denied {
		return StatusDenied
	}
	return StatusFailed
}

// Summary is the run as the runs projection lists it.
type Summary struct {
	RequestID  events.ID `json:"requestId"`
	SessionID  events.ID `json:"sessionId,omitzero"`
	Method     string    `json:"method,omitempty"`
	Command    string    `json:"command,omitempty"` // an operator's run: the pipe command it began with
	Tool       string    `json:"tool,omitempty"`
	Client     string    `json:"client,omitempty"` // the MCP client (name/version)
	Server     string    `json:"server,omitempty"` // the upstream server the call went to
	User       string    `json:"user,omitempty"`   // who made it ([auth])
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	DurationMs float64   `json:"durationMs"`
	Status     string    `json:"status"`
	Verdict    Verdict   `json:"verdict"`
	// WaitMs is the part of DurationMs spent waiting for an operator.
	WaitMs float64 `json:"waitMs,omitempty"`
	// Later is what happened to the call's proposal after it was answered.
	Later    *Verdict `json:"later,omitempty"`
	Events   int      `json:"events"`
	FirstSeq uint64   `json:"firstSeq"`
	LastSeq  uint64   `json:"lastSeq"`
}

// Summary returns the run's summary.
func (f *Fold) Summary() Summary {
	status, v := f.Judgement()
	end := f.End
	if !f.Answered.IsZero() {
		end = f.Answered // the call's own duration; later proposal steps are the operator's
	}
	return Summary{RequestID: f.RequestID, SessionID: f.SessionID, Method: f.Method, Command: f.Command, Tool: f.Tool, Client: f.Client, Server: f.Server, User: f.User,
		Start: f.Start, End: end, DurationMs: events.Ms(end.Sub(f.Start)), WaitMs: f.WaitMs, Later: f.Later,
		Status: status, Verdict: v, Events: f.Events, FirstSeq: f.FirstSeq, LastSeq: f.LastSeq}
}

// MarshalJSON writes null fields for a run that succeeded, so readers can
// test verdict.code == null.
func (v Verdict) MarshalJSON() ([]byte, error) {
	type plain struct {
		Boundary *events.Boundary `json:"boundary"`
		Kind     *string          `json:"kind"`
		Code     *events.Code     `json:"code"`
		Outcome  *events.Outcome  `json:"outcome"`
		Message  *string          `json:"message"`
		Action   *string          `json:"action"`
		Seq      uint64           `json:"seq,omitempty"`
	}
	if v.Boundary == "" && v.Kind == "" && v.Message == "" {
		return json.Marshal(plain{})
	}
	p := plain{Boundary: &v.Boundary, Kind: &v.Kind, Message: &v.Message, Action: &v.Action, Seq: v.Seq}
	if v.Code != "" {
		p.Code = &v.Code
	}
	if v.Outcome != "" {
		p.Outcome = &v.Outcome
	}
	return json.Marshal(p)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (v *Verdict) UnmarshalJSON(b []byte) error {
	var p struct {
		Boundary *events.Boundary `json:"boundary"`
		Kind     *string          `json:"kind"`
		Code     *events.Code     `json:"code"`
		Outcome  *events.Outcome  `json:"outcome"`
		Message  *string          `json:"message"`
		Action   *string          `json:"action"`
		Seq      uint64           `json:"seq"`
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*v = Verdict{Seq: p.Seq}
	if p.Outcome != nil {
		v.Outcome = *p.Outcome
	}
	if p.Boundary != nil {
		v.Boundary = *p.Boundary
	}
	if p.Kind != nil {
		v.Kind = *p.Kind
	}
	if p.Code != nil {
		v.Code = *p.Code
	}
	if p.Message != nil {
		v.Message = *p.Message
	}
	if p.Action != nil {
		v.Action = *p.Action
	}
	return nil
}
