package projections

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Proposal is one proposal's state machine as the log tells it.
type Proposal struct {
	ID          string       `json:"id"`
	RequestID   events.ID    `json:"requestId,omitzero"`
	State       string       `json:"state"` // pending, approved, rejected, applying, applied, failed
	Code        events.Code  `json:"code,omitempty"`
	Message     string       `json:"message,omitempty"`
	Files       string       `json:"files,omitempty"`
	ContentHash string       `json:"contentHash,omitempty"`
	Preview     string       `json:"preview,omitempty"` // unified diff, kept once applied
	Transitions []Transition `json:"transitions"`
	Created     time.Time    `json:"created,omitzero"`
	Updated     time.Time    `json:"updated,omitzero"`
}

// Transition is one step of a proposal.
type Transition struct {
	Seq   uint64      `json:"seq"`
	Time  time.Time   `json:"time"`
	Kind  string      `json:"kind"`
	State string      `json:"state"`
	By    string      `json:"by,omitempty"`
	Code  events.Code `json:"code,omitempty"`
}

type proposals struct{}

func (proposals) Name() string { return ViewProposals }
func (proposals) Version() int { return 1 }

func (proposals) Apply(kv KV, e *events.Event) error {
	id := e.Attrs.Get(events.AttrProposal)
	if id == "" || !strings.HasPrefix(e.Kind, "proposal.") {
		return nil
	}
	p, ok, err := loadState[Proposal](kv, []byte(id))
	if err != nil {
		return err
	}
	if !ok {
		*p = Proposal{ID: id, RequestID: e.RequestID, Created: e.Time}
	}
	state := e.Attrs.Get("state")
	if state == "" {
		state = strings.TrimPrefix(e.Kind, "proposal.")
	}
	if e.Kind == events.KindProposalApplying {
		state = "applying"
	}
	p.State, p.Updated = state, e.Time
	p.Code, p.Message = e.Code, e.Attrs.Get(events.AttrError)
	if v := e.Attrs.Get("files"); v != "" {
		p.Files = v
	}
	if v := e.Attrs.Get("contentHash"); v != "" {
		p.ContentHash = v
	}
	if v := e.Attrs.Get("preview"); v != "" && e.Kind == events.KindProposalApplied {
		p.Preview = v
	}
	if e.Kind == events.KindProposalReset {
		p.Preview = ""
	}
	p.Transitions = append(p.Transitions, Transition{Seq: e.Seq, Time: e.Time, Kind: e.Kind, State: state, By: e.Attrs.Get(events.AttrBy), Code: e.Code})
	return saveState(kv, []byte(id), p)
}

func (proposals) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	if q.Status == "" && q.Request.IsZero() {
		return copyJSON(v), true, nil
	}
	var p Proposal
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, false, err
	}
	return copyJSON(v), (q.Status == "" || p.State == q.Status) && (q.Request.IsZero() || p.RequestID == q.Request), nil
}

func (proposals) Key(s string) ([]byte, error) { return []byte(s), nil }
