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
	events.CodeInvalidRequest:   "the client reused an id still in flight or sent one that cannot be echoed exactly; check the client",
	events.CodeTooLarge:         "a frame exceeded the size limit",
	events.CodeMissingStep:      "a boundary answered without recording the end of its step: report it with this request id",
}

// Judge builds the run of one request from its events (in seq order).
func Judge(req events.ID, evs []events.Event) Run {
	r := Run{RequestID: req, Events: evs, Durations: map[string]float64{}}
	if evs == nil {
		r.Events = []events.Event{}
	}
	var f Fold
	for i := range evs {
		f.Add(&evs[i])
	}
	r.SessionID, r.Tool, r.Method = f.SessionID, f.Tool, f.Method
	for b, d := range f.Durations {
		r.Durations[b] = d
	}
	r.Status, r.Verdict = f.Judgement()
	return r
}
