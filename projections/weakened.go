package projections

import (
	"encoding/binary"
	"encoding/json"
	"strconv"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Weakening is a reload that loosened the configuration
// (policy.config.weakened): when, which file, and each change. Its key is
// the event's seq, so the view lists them oldest first.
type Weakening struct {
	Seq     uint64    `json:"seq"`
	Time    time.Time `json:"time"`
	Path    string    `json:"path"`
	Changes []string  `json:"changes"`
}

type weakened struct{}

func (weakened) Name() string { return ViewWeakened }
func (weakened) Version() int { return 1 }

func (weakened) Apply(kv KV, e *events.Event) error {
	if e.Kind != events.KindConfigWeakened {
		return nil
	}
	w := Weakening{Seq: e.Seq, Time: e.Time, Path: e.Attrs.Get(events.AttrPath)}
	json.Unmarshal([]byte(e.Attrs.Get("changes")), &w.Changes)
	return saveState(kv, binary.BigEndian.AppendUint64(nil, e.Seq), &w)
}

func (weakened) Present(_, v []byte, _ Query) (json.RawMessage, bool, error) {
	return copyJSON(v), true, nil
}

func (weakened) Key(s string) ([]byte, error) {
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return nil, err
	}
	return binary.BigEndian.AppendUint64(nil, n), nil
}
