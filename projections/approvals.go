package projections

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/policy"
)

// Approval is one tool call's approval as the log tells it: asked, then
// decided (by an operator, the configuration, a timeout or a cancel).
type Approval struct {
	ID        string    `json:"id"`
	Tool      string    `json:"tool"`
	RequestID events.ID `json:"requestId"`
	ArgsHash  string    `json:"argsHash"`
	Pin       string    `json:"pin,omitempty"` // the upstream descriptor hash the call is bound to
	Args      string    `json:"args"`
	// Who asks and what the tool says of itself, for the operator to
	// weigh: the session and its client, the upstream server, the tool's
	// MCP annotations (JSON).
	SessionID   events.ID `json:"sessionId,omitzero"`
	Client      string    `json:"client,omitempty"`
	Server      string    `json:"server,omitempty"`
	Annotations string    `json:"annotations,omitempty"`
	// User made the call, as the front door authenticated them ([auth]);
	// Deciders and FourEyes say who may approve it (policy.Deciders).
	User      identity.User `json:"user,omitzero"`
	Deciders  []string      `json:"deciders,omitempty"`
	FourEyes  bool          `json:"fourEyes,omitempty"`
	Deadline  time.Time     `json:"deadline"`
	Requested time.Time     `json:"requested"`
	State     string        `json:"state"` // pending | decided
	Decision  string        `json:"decision,omitempty"`
	By        string        `json:"by,omitempty"`
	Reason    string        `json:"reason,omitempty"`
	Decided   time.Time     `json:"decided,omitzero"`
	// Decider is who decided, as the UI authenticated them.
	Decider identity.User `json:"decider,omitzero"`
}

// Rule is who may approve a.
func (a Approval) Rule() policy.Deciders {
	return policy.Deciders{Groups: a.Deciders, FourEyes: a.FourEyes}
}

// Hints is what the tool's annotations say (AnnotationHints).
func (a Approval) Hints() []string { return AnnotationHints(a.Annotations) }

// Approval states.
const (
	ApprovalPending = "pending"
	ApprovalDecided = "decided"
)

type approvals struct{}

func (approvals) Name() string { return ViewApprovals }
func (approvals) Version() int { return 3 } // 2: session, client, server, annotations; 3: user, deciders, decider

func (approvals) Apply(kv KV, e *events.Event) error {
	id := e.Attrs.Get(events.AttrApprovalID)
	if id == "" {
		return nil
	}
	key, err := idKey(id)
	if err != nil {
		return nil // not an id this view can key
	}
	switch e.Kind {
	case events.KindApprovalRequested:
		deadline, _ := time.Parse(time.RFC3339Nano, e.Attrs.Get(events.AttrDeadline))
		return saveState(kv, key, &Approval{ID: id, Tool: e.Attrs.Get(events.AttrTool), RequestID: e.RequestID,
			ArgsHash: e.Attrs.Get(events.AttrArgsHash), Pin: e.Attrs.Get(events.AttrPin), Args: e.Attrs.Get("args"), Deadline: deadline, Requested: e.Time, State: ApprovalPending,
			SessionID: e.SessionID, Client: e.Attrs.Get(events.AttrClient), Server: e.Attrs.Get(events.AttrServer), Annotations: e.Attrs.Get(events.AttrAnnotations),
			User: identity.FromAttrs(e.Attrs.Get), Deciders: splitList(e.Attrs.Get(events.AttrDeciders)), FourEyes: e.Attrs.Get(events.AttrFourEyes) == "true"})
	case events.KindApprovalDecided:
		a, ok, err := loadState[Approval](kv, key)
		if err != nil || !ok || a.State == ApprovalDecided {
			return err // decided without asking (allow/deny mode), or decided already: the first stands
		}
		a.State, a.Decision, a.By, a.Reason, a.Decided = ApprovalDecided, e.Attrs.Get(events.AttrDecision), e.Attrs.Get(events.AttrBy), e.Attrs.Get(events.AttrReason), e.Time
		a.Decider = identity.FromAttrsAs(identity.DeciderPrefix, e.Attrs.Get)
		return saveState(kv, key, a)
	case events.KindApprovalRefused: // the approval came from someone who may not give it: the call was denied
		a, ok, err := loadState[Approval](kv, key)
		if err != nil || !ok {
			return err
		}
		a.Decision, a.Reason = events.Deny, e.Attrs.Get(events.AttrError)
		return saveState(kv, key, a)
	}
	return nil
}

func splitList(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func (approvals) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	if q.Status == "" && q.Request.IsZero() {
		return copyJSON(v), true, nil
	}
	var a Approval
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, false, err
	}
	return copyJSON(v), (q.Status == "" || a.State == q.Status) && (q.Request.IsZero() || a.RequestID == q.Request), nil
}

func (approvals) Key(s string) ([]byte, error) { return idKey(s) }
