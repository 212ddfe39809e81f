package hub

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/tracebridge/tracebridge/events"
)

// Payloads travel to and from the hub whole, one request each way:
//
//	tb.payload       frame: uvarint n | (uvarint len | bytes)* → {} once durable
//	tb.q.payload     {"sha256"} → the payload's bytes
//
// The embedded server takes messages of up to maxMessage bytes, so a payload
// of up to MaxPayloadLimit travels in one.
const (
	subjPayloadPut = "tb.payload"
	subjPayload    = "tb.q.payload"
	maxMessage     = 64 << 20
	// MaxPayloadLimit is the largest payload limit a process may set: one
	// payload and its framing fit one bus message.
	MaxPayloadLimit = 48 << 20
	maxPutFrame     = maxMessage - 1<<20
)

var (
	_ events.PayloadStore  = (*Node)(nil)
	_ events.PayloadReader = (*Node)(nil)
)

type payloadQuery struct {
	SHA256 events.Hash `json:"sha256"`
}

// KeepsPayloads reports whether this node's log keeps payloads whole. A node
// on a cluster does not (yet): its collectors would hold references to
// payloads only this machine has, so long values are cut there as before.
func (n *Node) KeepsPayloads() bool { return n.opts.Cluster == nil }

// PutPayloads stores ps durably in the log's payload store.
func (n *Node) PutPayloads(ctx context.Context, ps []string) error {
	if !n.KeepsPayloads() {
		return &events.RejectedError{Code: events.CodeLogUnavailable, Message: "payloads are not kept on a cluster"}
	}
	b, err := n.link(ctx)
	if err != nil {
		return err
	}
	return b.putPayloads(ctx, ps)
}

// Payload reads one payload back by its SHA-256.
func (n *Node) Payload(ctx context.Context, sum events.Hash) (string, error) {
	return query(ctx, n, func(b backend) (string, error) { return b.payload(ctx, sum) })
}

func (l *local) putPayloads(ctx context.Context, ps []string) error {
	return l.st.PutPayloads(ctx, ps)
}

func (l *local) payload(ctx context.Context, sum events.Hash) (string, error) {
	return l.st.Payload(ctx, sum)
}

// putPayloads sends ps in frames under the bus's message cap.
func (r *remote) putPayloads(ctx context.Context, ps []string) error {
	for start := 0; start < len(ps); {
		end, size := start, 0
		for end < len(ps) && (end == start || size+len(ps[end])+binary.MaxVarintLen64 <= maxPutFrame) {
			size += len(ps[end]) + binary.MaxVarintLen64
			end++
		}
		if _, err := r.request(ctx, subjPayloadPut, encodePayloads(ps[start:end]), r.timeout); err != nil {
			return err
		}
		start = end
	}
	return nil
}

func (r *remote) payload(ctx context.Context, sum events.Hash) (string, error) {
	m, err := r.queryJSON(ctx, subjPayload, payloadQuery{SHA256: sum}, r.timeout)
	if err != nil {
		var rej *events.RejectedError
		if errors.As(err, &rej) && rej.Code == events.CodePayloadMissing {
			return "", fmt.Errorf("%s: %w", rej.Message, events.ErrNoPayload)
		}
		return "", err
	}
	return string(m.Data), nil
}

// servePayloads stores one frame of payloads and replies once durable.
func (h *Hub) servePayloads(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	ps, err := decodePayloads(m.Data)
	if err != nil {
		h.reject(m, events.CodeMalformedAppend, err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.st.PutPayloads(ctx, ps); err != nil {
		h.fail(m, err)
		return
	}
	h.respond(m, jsonMsg(struct{}{}))
}

// queryPayload answers tb.q.payload.
func (h *Hub) queryPayload(data []byte) (*nats.Msg, error) {
	var q payloadQuery
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, &events.RejectedError{Code: events.CodeMalformedAppend, Message: "query " + subjPayload + ": " + err.Error()}
	}
	p, err := h.st.Payload(context.Background(), q.SHA256)
	if errors.Is(err, events.ErrNoPayload) {
		return nil, &events.RejectedError{Code: events.CodePayloadMissing, Message: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	out := nats.NewMsg("")
	out.Data = []byte(p)
	return out, nil
}

func encodePayloads(ps []string) []byte {
	size := binary.MaxVarintLen64
	for _, p := range ps {
		size += len(p) + binary.MaxVarintLen64
	}
	b := binary.AppendUvarint(make([]byte, 0, size), uint64(len(ps)))
	for _, p := range ps {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

// decodePayloads parses a frame of encodePayloads, checking every length
// against what the frame holds before taking it.
func decodePayloads(b []byte) ([]string, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: payload frame count", events.ErrMalformed)
	}
	b = b[k:]
	out := make([]string, 0, n)
	for range n {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: payload %d of the frame overruns it", events.ErrMalformed, len(out))
		}
		out = append(out, string(b[k:k+int(l)]))
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the last payload", events.ErrMalformed, len(b))
	}
	return out, nil
}
