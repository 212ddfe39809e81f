package projections

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Audit is one operation's audit envelope, as the executor recorded it.
type Audit struct {
	Seq         uint64          `json:"seq"`
	Time        time.Time       `json:"time"`
	RequestID   events.ID       `json:"requestId"`
	OperationID events.ID       `json:"operationId,omitzero"`
	SessionID   events.ID       `json:"sessionId,omitzero"`
	Tool        string          `json:"tool,omitempty"`
	Outcome     events.Outcome  `json:"outcome"`
	Code        events.Code     `json:"code,omitempty"`
	Envelope    json.RawMessage `json:"envelope"`
}

// audit keys envelopes by seq, so the newest come first.
type audit struct{}

func (audit) Name() string { return ViewAudit }
func (audit) Version() int { return 1 }

func (audit) Apply(kv KV, e *events.Event) error {
	if e.Kind != events.KindExecutorAudit {
		return nil
	}
	a := Audit{Seq: e.Seq, Time: e.Time, RequestID: e.RequestID, OperationID: e.OperationID, SessionID: e.SessionID,
		Outcome: e.Outcome, Code: e.Code, Envelope: json.RawMessage(`null`)}
	var env struct {
		Tool string `json:"tool"`
	}
	// One pass: Unmarshal checks the whole text before it decodes, so only
	// a syntax error means the envelope is not JSON.
	raw := []byte(e.Attrs.Get(events.AttrEnvelope))
	var syntax *json.SyntaxError
	if err := json.Unmarshal(raw, &env); !errors.As(err, &syntax) {
		a.Envelope = raw
	} else if len(raw) > 0 {
		a.Envelope, _ = json.Marshal(e.Attrs.Get(events.AttrEnvelope)) // truncated or redacted: kept as text
	}
	a.Tool = env.Tool
	return putJSON(kv, binary.BigEndian.AppendUint64(nil, e.Seq), &a)
}

func (audit) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	if q.Tool == "" && q.Session.IsZero() && q.Request.IsZero() {
		return copyJSON(v), true, nil
	}
	var a Audit
	if err := json.Unmarshal(v, &a); err != nil {
		return nil, false, err
	}
	keep := (q.Tool == "" || a.Tool == q.Tool) && (q.Session.IsZero() || a.SessionID == q.Session) &&
		(q.Request.IsZero() || a.RequestID == q.Request)
	return copyJSON(v), keep, nil
}

func (audit) Key(s string) ([]byte, error) {
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, fmt.Errorf("audit entries are keyed by the seq of their executor.audit event: %w", err)
	}
	return binary.BigEndian.AppendUint64(nil, seq), nil
}
