package replay

import (
	"github.com/tracebridge/tracebridge/events"
)

// Statuses of a run.
const (
	StatusOK         = "ok"
	StatusFailed     = "failed"
	StatusDenied     = "denied"
	StatusIncomplete = "incomplete"
)

// Verdict is the judgement of a run. Its fields are empty when it succeeded.
type Verdict struct {
	Boundary events.Boundary `json:"boundary"`
	Kind     string          `json:"kind"`
	Code     events.Code     `json:"code"`
	Message  string          `json:"message"`
	Action   string          `json:"action"`
}

// Run is one request, reconstructed.
type Run struct {
	RequestID events.ID          `json:"requestId"`
	SessionID events.ID          `json:"sessionId,omitzero"`
	Tool      string             `json:"tool,omitempty"`
	Method    string             `json:"method,omitempty"`
	Status    string             `json:"status"`
	Verdict   Verdict            `json:"verdict"`
	Durations map[string]float64 `json:"boundaryMs"` // summed durationMs per boundary
	Events    []events.Event     `json:"events"`
}

// actions say what an operator can do about each code.
var actions = map[events.Code]string{
	events.CodePipeUnavailable:  "start the workspace host: tracebridge up --root <workspace> (or tracebridge host --root <workspace>)",
	events.CodePipeTimeout:      "check the host is responsive; raise [pipe] timeout in tracebridge.toml if the work is slow",
	events.CodePolicyDenied:     "grant the capability in policy.grant, or remove the tool from policy.deny, in tracebridge.toml",
	events.CodeConfigInvalid:    "run tracebridge config check and fix the file",
	events.CodeApprovalDenied:   "an operator or approval.mode denied it; re-run and approve with tracebridge approvals if intended",
	events.CodeApprovalTimeout:  "answer with tracebridge approvals list / approve while the call waits, or raise approval.timeout",
	events.CodeSecretUnresolved: "set the environment variable or file named in the tool's [secrets] reference",
	events.CodeUnknownTool:      "the client called a tool this bridge does not serve; check tools/list",
	events.CodeInvalidArguments: "the arguments did not fit the tool's schema; see the message",
	events.CodeToolTimeout:      "raise tools.<id>.timeout in tracebridge.toml or narrow the call",
	events.CodeToolPanic:        "the tool crashed; report it with this request id",
	events.CodeLogUnavailable:   "the event log refused writes: run tracebridge verify and check the hub's stderr",
	events.CodeDrift:            "the file changed since the proposal; ask for a new proposal",
	events.CodeAmbiguous:        "the original text occurs more than once; propose with more context",
	events.CodePathRefused:      "the path leaves the workspace or is not a regular file",
	events.CodeMalformedFrame:   "the client sent a line that is not JSON-RPC; check the client",
	events.CodeTooLarge:         "a frame exceeded the size limit",
}

// terminal kinds close a request.
var terminal = map[string]bool{
	events.KindMCPResponseSent: true, events.KindMCPSessionEnded: true, events.KindMCPSessionAborted: true,
	events.KindProposalApplied: true, events.KindProposalFailed: true, events.KindProposalRejected: true,
	events.KindApprovalDecided: true, events.KindOperatorAction: true,
}

// Judge builds the run of one request from its events (in seq order).
func Judge(req events.ID, evs []events.Event) Run {
	r := Run{RequestID: req, Events: evs, Durations: map[string]float64{}, Status: StatusOK}
	if evs == nil {
		r.Events = []events.Event{}
	}
	for _, e := range evs {
		if r.SessionID.IsZero() {
			r.SessionID = e.SessionID
		}
		if r.Tool == "" {
			r.Tool = e.Attrs["tool"]
		}
		if r.Method == "" {
			r.Method = e.Attrs["method"]
		}
		r.Durations[string(e.Boundary)] += e.DurationMs
	}
	for _, e := range evs {
		if !e.Outcome.Failed() {
			continue
		}
		r.Status = StatusFailed
		if e.Outcome == events.Denied {
			r.Status = StatusDenied
		}
		msg := e.Attrs["error"]
		if msg == "" {
			msg = e.Attrs["reason"]
		}
		if msg == "" {
			msg = string(e.Kind) + " ended " + string(e.Outcome)
		}
		r.Verdict = Verdict{Boundary: e.Boundary, Kind: e.Kind, Code: e.Code, Message: msg, Action: actions[e.Code]}
		return r
	}
	if len(evs) == 0 || !terminal[evs[len(evs)-1].Kind] {
		last := events.Event{Boundary: "none"}
		if len(evs) > 0 {
			last = evs[len(evs)-1]
		}
		r.Status = StatusIncomplete
		r.Verdict = Verdict{Boundary: last.Boundary, Kind: last.Kind,
			Message: "the run stopped after " + string(last.Boundary) + " (" + last.Kind + ") with no answer recorded: the process ended mid-request",
			Action:  "check the bridge's log file (logs/mcp-<pid>.log in the data dir) around this time"}
	}
	return r
}
