package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// maxQueryRecords caps the records of one query reply; clients page on.
const maxQueryRecords = 2048

// serveAppend stores one batch frame and replies once it is durable.
func (h *Hub) serveAppend(m *nats.Msg) {
	if m.Reply == "" {
		return // a publish, not a request: nobody waits for the answer
	}
	evs, err := events.DecodeBatch(m.Data)
	if err != nil {
		code := events.CodeMalformedAppend
		if len(m.Data) > events.MaxBatchBytes {
			code = events.CodeTooLarge
		}
		h.reject(m, code, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	seqs, err := h.append(ctx, evs)
	if err != nil {
		h.fail(m, err)
		return
	}
	h.respond(m, jsonMsg(appendReply{Seqs: seqs}))
}

// fail answers a request that could not be served: a refusal keeps its
// code, anything else means the log is unavailable.
func (h *Hub) fail(m *nats.Msg, err error) {
	var rej *events.Err
	if errors.As(err, &rej) {
		h.reject(m, rej.Code, err)
		return
	}
	h.respond(m, errorMsg(events.CodeLogUnavailable, err))
}

// reject records a refused request as an event, then answers it: the
// evidence is durable before the sender learns the outcome.
func (h *Hub) reject(m *nats.Msg, code events.Code, err error) {
	if code != events.CodeChainBroken && code != events.CodeLogUnavailable { // else the log cannot take the record either
		h.record(events.Event{Kind: events.KindAppendRejected, Outcome: events.Error, Code: code,
			Attrs: events.A("subject", m.Subject, "bytes", strconv.Itoa(len(m.Data)), "error", truncateErr(err))})
	}
	h.respond(m, errorMsg(code, err))
}

func truncateErr(err error) string {
	s := err.Error()
	if len(s) > 500 {
		s = s[:500] + "…"
	}
	return s
}

func (h *Hub) respond(m *nats.Msg, reply *nats.Msg) {
	if m.Reply == "" {
		return
	}
	reply.Subject = m.Reply
	if err := h.nc.PublishMsg(reply); err != nil {
		h.log.Warn("reply failed", "subject", m.Subject, "err", err)
	}
}

// serveQuery answers the read subjects.
func (h *Hub) serveQuery(m *nats.Msg) {
	reply, err := h.query(m)
	if err != nil {
		h.fail(m, err)
		return
	}
	h.respond(m, reply)
}

func (h *Hub) query(m *nats.Msg) (*nats.Msg, error) {
	switch m.Subject {
	case subjRange:
		return h.queryRange(m)
	case subjRequest:
		return h.queryRequest(m)
	case subjSession:
		return h.querySession(m)
	case subjHead:
		seq, hash := h.st.Head()
		return jsonMsg(headReply{Seq: seq, Hash: hash}), nil
	case subjVerify:
		var q verifyQuery
		if err := decodeQuery(m, &q); err != nil {
			return nil, err
		}
		rep, err := h.st.Verify(q.Checkpoints...)
		if err != nil {
			return nil, err
		}
		return jsonMsg(rep), nil
	case subjCheckpoint:
		return jsonMsg(h.st.SignCheckpoint(h.key, h.now())), nil
	case subjView:
		var q projections.Query
		if err := decodeQuery(m, &q); err != nil {
			return nil, err
		}
		return h.view(q)
	case subjPayload:
		return h.queryPayload(m.Data)
	case subjRebuild:
		var q rebuildQuery
		if err := decodeQuery(m, &q); err != nil {
			return nil, err
		}
		return h.rebuild(q)
	}
	return nil, &events.Err{Code: events.CodeUnknownQuery, Msg: "no query " + m.Subject}
}

// decodeQuery reads a query's JSON arguments into v (none: v stays zero).
func decodeQuery(m *nats.Msg, v any) error {
	if len(m.Data) == 0 {
		return nil
	}
	if err := json.Unmarshal(m.Data, v); err != nil {
		return &events.Err{Code: events.CodeMalformedQuery, Msg: fmt.Sprintf("query %s: %v", m.Subject, err)}
	}
	return nil
}

// queryLimit is a query's limit, at most maxQueryRecords (0: that many).
func queryLimit(n int) int {
	if n <= 0 || n > maxQueryRecords {
		return maxQueryRecords
	}
	return n
}

// queryRange answers stored records from a seq, as many as one reply holds.
func (h *Hub) queryRange(m *nats.Msg) (*nats.Msg, error) {
	var q rangeQuery
	if err := decodeQuery(m, &q); err != nil {
		return nil, err
	}
	recs, next, err := h.st.RangeRecords(max(q.From, 1), queryLimit(q.Limit), events.MaxBatchBytes-4096)
	if err != nil {
		return nil, err
	}
	out := nats.NewMsg("")
	out.Data = events.EncodeRecords(recs)
	out.Header.Set(hdrNext, strconv.FormatUint(next, 10))
	return out, nil
}

// queryRequest answers one request's records.
func (h *Hub) queryRequest(m *nats.Msg) (*nats.Msg, error) {
	var q idQuery
	if err := decodeQuery(m, &q); err != nil {
		return nil, err
	}
	recs, err := h.st.RecordsByRequest(q.ID)
	if err != nil {
		return nil, err
	}
	if len(recs) > maxQueryRecords {
		return nil, &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("request %s has %d events; more than one reply holds", q.ID, len(recs))}
	}
	out := nats.NewMsg("")
	out.Data = events.EncodeRecords(recs)
	return out, nil
}

// querySession answers a session's events from a seq.
func (h *Hub) querySession(m *nats.Msg) (*nats.Msg, error) {
	var q idQuery
	if err := decodeQuery(m, &q); err != nil {
		return nil, err
	}
	evs, err := h.st.BySession(q.ID, q.From, queryLimit(q.Limit))
	if err != nil {
		return nil, err
	}
	out := nats.NewMsg("")
	out.Data = events.EncodeBatch(evs)
	return out, nil
}
