package projections

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Review is a workspace's review document: the current text and every
// version's metadata.
type Review struct {
	Workspace string          `json:"workspace"`
	Current   string          `json:"current"` // as recorded: a document over 4 KiB is truncated by redaction
	Versions  []ReviewVersion `json:"versions"`
}

// ReviewVersion is one presentation of the review.
type ReviewVersion struct {
	Version    int       `json:"version"`
	Seq        uint64    `json:"seq"`
	Time       time.Time `json:"time"`
	RequestID  events.ID `json:"requestId,omitzero"`
	Mode       string    `json:"mode"`
	Section    string    `json:"section,omitempty"`
	Bytes      int       `json:"bytes"`
	Refs       int       `json:"refs"`
	BrokenRefs int       `json:"brokenRefs"`
}

type reviews struct{}

func (reviews) Name() string { return ViewReviews }
func (reviews) Version() int { return 1 }

func (reviews) Apply(kv KV, e *events.Event) error {
	if e.Kind != events.KindReviewPresented || e.Outcome.Failed() {
		return nil
	}
	ws := e.Attrs.Get("workspace")
	r, ok, err := loadState[Review](kv, []byte(ws))
	if err != nil {
		return err
	}
	if !ok {
		*r = Review{Workspace: ws}
	}
	num := func(k string) int { n, _ := strconv.Atoi(e.Attrs.Get(k)); return n }
	r.Current = e.Attrs.Get("content")
	v := ReviewVersion{Version: num("version"), Seq: e.Seq, Time: e.Time, RequestID: e.RequestID, Mode: e.Attrs.Get("mode"),
		Section: e.Attrs.Get("section"), Bytes: num("bytes"), Refs: num("refs"), BrokenRefs: num("brokenRefs")}
	if v.Version == 0 {
		v.Version = len(r.Versions) + 1
	}
	r.Versions = append(r.Versions, v)
	return saveState(kv, []byte(ws), r)
}

func (reviews) Present(_, v []byte, _ Query) (json.RawMessage, bool, error) {
	return copyJSON(v), true, nil
}

func (reviews) Key(s string) ([]byte, error) { return []byte(s), nil }
