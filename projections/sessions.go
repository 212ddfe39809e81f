package projections

import (
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Session is one MCP session as the sessions view keeps it.
type Session struct {
	SessionID       events.ID `json:"sessionId"`
	Client          string    `json:"client,omitempty"` // name/version from initialize
	ProtocolVersion string    `json:"protocolVersion,omitempty"`
	Start           time.Time `json:"start,omitzero"`
	End             time.Time `json:"end,omitzero"`
	Transport       string    `json:"transport,omitempty"` // pipe (stdio) or tcp (the HTTP front door)
	Requests        int       `json:"requests"`
	// Failures counts the requests answered with an error or a refusal.
	Failures int         `json:"failures,omitempty"`
	State    string      `json:"state"` // open, ended, aborted
	Code     events.Code `json:"code,omitempty"`
	FirstSeq uint64      `json:"firstSeq"`
	LastSeq  uint64      `json:"lastSeq"`
	// Opened is whether a bridge served the session (mcp.session.started):
	// a client's, even one that names itself on no request (2026-07-28).
	Opened bool `json:"opened,omitempty"`
}

// Synthetic reports whether no MCP client opened the session: load a
// test or the demo's burst appended (lists leave these out by default).
func (s Session) Synthetic() bool { return !s.Opened && s.Client == "" }

type sessions struct{}

func (sessions) Name() string { return ViewSessions }
func (sessions) Version() int { return 3 } // 2: transport, failures; 3: opened

func (sessions) Apply(kv KV, e *events.Event) error {
	if e.SessionID.IsZero() {
		return nil
	}
	s, ok, err := loadState[Session](kv, e.SessionID[:])
	if err != nil {
		return err
	}
	if !ok {
		*s = Session{SessionID: e.SessionID, Start: e.Time, State: "open", FirstSeq: e.Seq}
	}
	s.LastSeq = e.Seq
	switch e.Kind {
	case events.KindMCPSessionStarted:
		s.Start, s.Opened = e.Time, true
	case events.KindMCPRequestReceived:
		s.Requests++
		if v := e.Attrs.Get(events.AttrClient); v != "" {
			s.Client = v
		}
		if v := e.Attrs.Get("protocolVersion"); v != "" {
			s.ProtocolVersion = v
		}
		if v := e.Attrs.Get("transport"); v != "" {
			s.Transport = v
		}
	case events.KindMCPResponseSent:
		if e.Outcome != events.OK && e.Outcome != "" {
			s.Failures++
		}
	case events.KindMCPSessionEnded:
		s.End, s.State = e.Time, "ended"
	case events.KindMCPSessionAborted:
		s.End, s.State, s.Code = e.Time, "aborted", e.Code
	}
	return saveState(kv, e.SessionID[:], s)
}

func (sessions) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	return copyJSON(v), true, nil
}

func copyJSON(v []byte) json.RawMessage { return append(json.RawMessage(nil), v...) }

func (sessions) Key(s string) ([]byte, error) { return idKey(s) }
