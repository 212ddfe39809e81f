package projections

import (
	"encoding/json"

	"github.com/tracebridge/tracebridge/events"
)

// KV is the state a projection reads and writes while applying an event.
// Values returned by Get are only valid until the next call.
type KV interface {
	Get(k []byte) []byte
	Put(k, v []byte) error
}

// Projection folds events into its state.
type Projection interface {
	// Name is the view's name: runs, audit, proposals, reviews, sessions.
	Name() string
	// Version changes whenever the state's shape or meaning does; a stored
	// state of another version is rebuilt.
	Version() int
	// Apply folds e, the next event in seq order, into kv. It must depend
	// on nothing but kv and e.
	Apply(kv KV, e *events.Event) error
	// Key turns the text of a key (a request id, a seq, a proposal id)
	// into the stored key.
	Key(s string) ([]byte, error)
	// Present turns one stored value into the JSON a reader gets, and says
	// whether it passes q's filters.
	Present(k, v []byte, q Query) (json.RawMessage, bool, error)
}

// All returns every projection, in a fixed order.
func All() []Projection {
	return []Projection{runs{}, audit{}, proposals{}, reviews{}, sessions{}, approvals{}, pins{}}
}

// Names lists the projections' names.
func Names() []string {
	var out []string
	for _, p := range All() {
		out = append(out, p.Name())
	}
	return out
}

// Query asks one view for its entries, newest key first.
type Query struct {
	View    string    `json:"view"`
	Key     string    `json:"key,omitempty"`    // one entry (a request, session, proposal id…)
	Status  string    `json:"status,omitempty"` // runs: ok, failed, denied, incomplete
	Tool    string    `json:"tool,omitempty"`   // runs, audit
	Session events.ID `json:"session,omitzero"` // runs, audit
	Request events.ID `json:"request,omitzero"` // audit, proposals
	Text    string    `json:"text,omitempty"`   // runs: a substring of the id, tool, method, status or verdict
	Kind    string    `json:"kind,omitempty"`   // runs: mcp (an AI client's requests), other (operator actions, UI views, synthetic load); "" all
	Limit   int       `json:"limit,omitempty"`  // 0: 100
}

func idKey(s string) ([]byte, error) {
	id, err := events.ParseID(s)
	if err != nil {
		return nil, err
	}
	return id[:], nil
}

// getJSON decodes the value at k into v; ok is false when there is none.
func getJSON(kv KV, k []byte, v any) (bool, error) {
	b := kv.Get(k)
	if b == nil {
		return false, nil
	}
	return true, json.Unmarshal(b, v)
}

func putJSON(kv KV, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return kv.Put(k, b)
}
