package hub

import (
	"encoding/json"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// Subjects served by the hub.
const (
	subjAppend     = "tb.append"
	subjQuery      = "tb.q.>"
	subjRange      = "tb.q.range"
	subjRequest    = "tb.q.request"
	subjSession    = "tb.q.session"
	subjHead       = "tb.q.head"
	subjVerify     = "tb.q.verify"
	subjCheckpoint = "tb.q.checkpoint"
	subjView       = "tb.q.view"
	subjRebuild    = "tb.q.rebuild"
	// SubjEvents is the prefix of live events: tb.events.<requestId>.<kind>.
	SubjEvents = "tb.events"
)

const (
	hdrCode  = "Tb-Code"
	hdrError = "Tb-Error"
	hdrNext  = "Tb-Next"
)

type appendReply struct {
	Seqs []uint64 `json:"seqs"`
}

type rangeQuery struct {
	From  uint64 `json:"from"`
	Limit int    `json:"limit"`
}

type idQuery struct {
	ID    events.ID `json:"id"`
	From  uint64    `json:"from,omitempty"`
	Limit int       `json:"limit,omitempty"`
}

type headReply struct {
	Seq  uint64      `json:"seq"`
	Hash events.Hash `json:"hash"`
}

type verifyQuery struct {
	Checkpoints []store.Checkpoint `json:"checkpoints,omitempty"`
}

// eventSubject is where a committed event is republished.
func eventSubject(e *events.Event) string {
	req := "-"
	if !e.RequestID.IsZero() {
		req = e.RequestID.String()
	}
	return SubjEvents + "." + req + "." + e.Kind
}

func errorMsg(code events.Code, err error) *nats.Msg {
	m := nats.NewMsg("")
	m.Header.Set(hdrCode, string(code))
	m.Header.Set(hdrError, strings.ReplaceAll(err.Error(), "\n", " "))
	return m
}

func jsonMsg(v any) *nats.Msg {
	m := nats.NewMsg("")
	b, err := json.Marshal(v)
	if err != nil {
		return errorMsg(events.CodeLogUnavailable, err)
	}
	m.Data = b
	return m
}

// replyError turns an error reply into a Go error: an *events.Err
// carrying the hub's code.
func replyError(m *nats.Msg) error {
	if m.Header == nil {
		return nil
	}
	code := m.Header.Get(hdrCode)
	if code == "" {
		return nil
	}
	return &events.Err{Code: events.Code(code), Msg: m.Header.Get(hdrError)}
}

// ErrHubUnavailable wraps every transport failure: no hub answered. The
// emitter retries these; a Node elects or attaches again on the next call.
var ErrHubUnavailable = &events.Err{Code: events.CodeHubUnavailable, Msg: "hub unavailable"}
