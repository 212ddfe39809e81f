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
	return []Projection{runs{}, audit{}, proposals{}, reviews{}, sessions{}, approvals{}, pins{}, offers{}, weakened{}, spawns{}}
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

// loadState returns the state at k, decoded; found is false when there is
// none (then *T is zero). Folding into an overlay (the projector's chunks),
// it is decoded once per chunk and the same *T is returned until the chunk
// is written back, so a run's 50 events cost one decode and one encode, not
// 50 of each. Callers mutate it only to save it.
func loadState[T any](kv KV, k []byte) (t *T, found bool, err error) {
	o, _ := kv.(*overlay)
	if o != nil {
		if v, ok := o.typed[string(k)]; ok {
			return v.(*T), true, nil
		}
	}
	t = new(T)
	if found, err = getJSON(kv, k, t); err != nil {
		return nil, false, err
	}
	return t, found, nil
}

// saveState stores t at k: kept decoded in an overlay, else encoded now.
func saveState[T any](kv KV, k []byte, t *T) error {
	if o, ok := kv.(*overlay); ok {
		o.keep(k, t)
		return nil
	}
	return putJSON(kv, k, t)
}

func putJSON(kv KV, k []byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return kv.Put(k, b)
}
