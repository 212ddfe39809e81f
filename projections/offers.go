package projections

import (
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Offers is what an upstream server last listed besides tools, as it
// named them (JSON arrays; a long one is a payload reference): what a
// session export gives its re-drive to list. Its key is the server.
type Offers struct {
	Server    string    `json:"server"`
	Prompts   string    `json:"prompts,omitempty"`
	Resources string    `json:"resources,omitempty"`
	Templates string    `json:"templates,omitempty"`
	Listed    time.Time `json:"listed"`
}

type offers struct{}

func (offers) Name() string { return ViewOffers }
func (offers) Version() int { return 1 }

func (offers) Apply(kv KV, e *events.Event) error {
	server := e.Attrs.Get(events.AttrServer)
	if e.Kind != events.KindUpstreamOffers || server == "" {
		return nil
	}
	o := Offers{Server: server, Prompts: e.Attrs.Get("prompts"), Resources: e.Attrs.Get("resources"), Templates: e.Attrs.Get("templates"), Listed: e.Time}
	return saveState(kv, []byte(server), &o)
}

func (offers) Present(_, v []byte, _ Query) (json.RawMessage, bool, error) {
	return copyJSON(v), true, nil
}

func (offers) Key(s string) ([]byte, error) { return []byte(s), nil }
