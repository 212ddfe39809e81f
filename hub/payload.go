package hub

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
)

// Payloads travel to and from the hub in messages under the bus's 1 MiB
// cap (NATS advises against large messages; a big one would hold the
// connection others append on):
//
//	tb.payload       frame of whole payloads of up to partSize bytes:
//	                 uvarint n | (uvarint len | bytes)* → {} once durable
//	tb.payload.part  one part of a longer payload, in order, headers Tb-Sum
//	                 (its SHA-256), Tb-Size, Tb-Offset, Tb-Upload (the
//	                 sender's, so two senders of one payload never mix) → {};
//	                 the last part's reply comes once the payload is durable
//	tb.q.payload     {"sha256","offset"} → up to partSize bytes from offset,
//	                 header Tb-Size (the payload's size)
const (
	subjPayloadPut  = "tb.payload"
	subjPayloadPart = "tb.payload.part"
	subjPayload     = "tb.q.payload"
	partSize        = 512 << 10
	maxPutFrame     = 900 << 10
	// MaxPayloadLimit is the largest payload limit a process may set.
	MaxPayloadLimit = 48 << 20
	// maxUploading bounds the parts a hub holds for payloads not yet whole;
	// an upload idle for uploadIdle is dropped (its sender starts again).
	maxUploading = 128 << 20
	uploadIdle   = time.Minute
	hdrSum       = "Tb-Sum"
	hdrSize      = "Tb-Size"
	hdrOffset    = "Tb-Offset"
	hdrUpload    = "Tb-Upload"
)

var (
	_ events.PayloadStore  = (*Node)(nil)
	_ events.PayloadReader = (*Node)(nil)
)

type payloadQuery struct {
	SHA256 events.Hash `json:"sha256"`
	Offset int         `json:"offset,omitempty"`
}

// KeepsPayloads reports whether this node's log keeps payloads whole. A log
// on a cluster does not (yet): its collectors would hold references to
// payloads only this machine has, so long values are cut there as before —
// whether this node was asked for the cluster or attached to a hub on one.
func (n *Node) KeepsPayloads() bool {
	if n.opts.Cluster != nil {
		return false
	}
	info, ok := n.Hub()
	return !ok || info.Stream == ""
}

// PutPayloads stores ps durably in the log's payload store.
func (n *Node) PutPayloads(ctx context.Context, ps []string) error {
	if !n.KeepsPayloads() {
		return &events.Err{Code: events.CodePayloadMissing, Msg: errNoPayloadsOnCluster.Error()}
	}
	for _, p := range ps {
		if len(p) > MaxPayloadLimit {
			return &events.Err{Code: events.CodeTooLarge, Msg: fmt.Sprintf("a payload of %d bytes: the log keeps at most %d", len(p), MaxPayloadLimit)}
		}
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

// putPayloads sends the short payloads of ps in frames under the bus cap,
// and each long one in parts.
func (r *remote) putPayloads(ctx context.Context, ps []string) error {
	var short []string
	size := 0
	flush := func() error {
		if len(short) == 0 {
			return nil
		}
		_, err := r.request(ctx, subjPayloadPut, encodePayloads(short), r.timeout)
		short, size = short[:0], 0
		return err
	}
	for _, p := range ps {
		if len(p) > partSize {
			if err := r.putParts(ctx, p); err != nil {
				return err
			}
			continue
		}
		if size+len(p)+binary.MaxVarintLen64 > maxPutFrame {
			if err := flush(); err != nil {
				return err
			}
		}
		short = append(short, p)
		size += len(p) + binary.MaxVarintLen64
	}
	return flush()
}

func (r *remote) putParts(ctx context.Context, p string) error {
	sum := sha256.Sum256([]byte(p))
	id := events.NewID().String()
	for off := 0; off < len(p); off += partSize {
		m := nats.NewMsg(subjPayloadPart)
		m.Header.Set(hdrUpload, id)
		m.Header.Set(hdrSum, hex.EncodeToString(sum[:]))
		m.Header.Set(hdrSize, strconv.Itoa(len(p)))
		m.Header.Set(hdrOffset, strconv.Itoa(off))
		m.Data = []byte(p[off:min(len(p), off+partSize)])
		rctx, cancel := context.WithTimeout(ctx, r.timeout)
		reply, err := r.nc.RequestMsgWithContext(rctx, m)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("%s: %w", subjPayloadPart, ctx.Err())
			}
			r.nc.Close()
			return fmt.Errorf("%w: %s: %v", ErrHubUnavailable, subjPayloadPart, err)
		}
		if err := replyError(reply); err != nil {
			var rej *events.Err
			if errors.As(err, &rej) && rej.Code == events.CodeHubUnavailable {
				return fmt.Errorf("%w: %s", ErrHubUnavailable, rej.Msg) // busy, or the upload was dropped: the emitter sends again
			}
			return err
		}
	}
	return nil
}

func (r *remote) payload(ctx context.Context, sum events.Hash) (string, error) {
	var out []byte
	for {
		m, err := r.queryJSON(ctx, subjPayload, payloadQuery{SHA256: sum, Offset: len(out)}, r.timeout)
		if err != nil {
			var rej *events.Err
			if errors.As(err, &rej) && rej.Code == events.CodePayloadMissing {
				return "", fmt.Errorf("%s: %w", rej.Msg, events.ErrNoPayload)
			}
			return "", err
		}
		size, err := strconv.Atoi(m.Header.Get(hdrSize))
		if err != nil || size > MaxPayloadLimit || len(out)+len(m.Data) > size || (len(m.Data) == 0 && len(out) < size) {
			return "", fmt.Errorf("payload %s: a bad part from the hub (%d bytes at %d of %q)", sum, len(m.Data), len(out), m.Header.Get(hdrSize))
		}
		if out == nil {
			out = make([]byte, 0, size)
		}
		out = append(out, m.Data...)
		if len(out) == size {
			return string(out), nil
		}
	}
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
	if h.cl != nil {
		h.reject(m, events.CodePayloadMissing, errNoPayloadsOnCluster)
		return
	}
	h.storePayloads(m, ps)
}

func (h *Hub) storePayloads(m *nats.Msg, ps []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := h.st.PutPayloads(ctx, ps); err != nil {
		h.fail(m, err)
		return
	}
	h.respond(m, jsonMsg(struct{}{}))
}

var errNoPayloadsOnCluster = errors.New("a hub on a cluster keeps no payloads (its collectors could not resolve them): long values are cut there")

// uploads holds the parts of long payloads until each is whole.
type uploads struct {
	mu    sync.Mutex
	held  int
	byKey map[string]*upload
}

type upload struct {
	buf  []byte
	size int
	last time.Time
}

// servePart takes one part of a long payload; the last one stores it.
func (h *Hub) servePart(m *nats.Msg) {
	if m.Reply == "" {
		return
	}
	sumText, id := m.Header.Get(hdrSum), m.Header.Get(hdrUpload)
	size, err1 := strconv.Atoi(m.Header.Get(hdrSize))
	off, err2 := strconv.Atoi(m.Header.Get(hdrOffset))
	if len(sumText) != 64 || id == "" || len(id) > 64 || err1 != nil || err2 != nil || size <= 0 || size > MaxPayloadLimit || off < 0 || off+len(m.Data) > size || len(m.Data) == 0 {
		h.reject(m, events.CodeMalformedAppend, fmt.Errorf("payload part: sum %q, upload %q, size %q, offset %q, %d bytes", sumText, id, m.Header.Get(hdrSize), m.Header.Get(hdrOffset), len(m.Data)))
		return
	}
	if h.cl != nil {
		h.reject(m, events.CodePayloadMissing, errNoPayloadsOnCluster)
		return
	}
	whole, err := h.uploads.add(sumText+"/"+id, size, off, m.Data, time.Now())
	switch {
	case err != nil:
		h.respond(m, errorMsg(events.CodeHubUnavailable, fmt.Errorf("payload %s…: %w", sumText[:12], err)))
	case whole == nil:
		h.respond(m, jsonMsg(struct{}{}))
	case hexSum(whole) != sumText:
		h.reject(m, events.CodeMalformedAppend, fmt.Errorf("payload %s…: its parts do not hash to it", sumText[:12]))
	default:
		h.storePayloads(m, []string{string(whole)})
	}
}

func hexSum(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// add takes the part at off of the payload uploaded as key (size bytes in
// all) and returns the payload once it is whole. Uploads idle for
// uploadIdle are dropped first; a part out of order, or a new upload past
// maxUploading held, is refused (the sender starts again).
func (u *uploads) add(key string, size, off int, data []byte, now time.Time) (whole []byte, err error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for k, up := range u.byKey {
		if now.Sub(up.last) > uploadIdle {
			u.held -= up.size
			delete(u.byKey, k)
		}
	}
	up := u.byKey[key]
	switch {
	case up == nil && off != 0, up != nil && (off != len(up.buf) || size != up.size):
		return nil, fmt.Errorf("part at %d is out of order (the upload was dropped?); send the payload again from its start", off)
	case up == nil && u.held+size > maxUploading:
		return nil, fmt.Errorf("the hub holds %d bytes of payloads being sent; try again", u.held)
	case up == nil:
		if u.byKey == nil {
			u.byKey = map[string]*upload{}
		}
		up = &upload{buf: make([]byte, 0, size), size: size}
		u.byKey[key] = up
		u.held += size
	}
	up.buf = append(up.buf, data...)
	up.last = now
	if len(up.buf) != up.size {
		return nil, nil
	}
	u.held -= up.size
	delete(u.byKey, key)
	return up.buf, nil
}

// queryPayload answers tb.q.payload with one part of a payload.
func (h *Hub) queryPayload(data []byte) (*nats.Msg, error) {
	var q payloadQuery
	if err := json.Unmarshal(data, &q); err != nil {
		return nil, &events.Err{Code: events.CodeMalformedQuery, Msg: "query " + subjPayload + ": " + err.Error()}
	}
	part, size, err := h.st.PayloadPart(q.SHA256, q.Offset, partSize)
	if errors.Is(err, events.ErrNoPayload) {
		return nil, &events.Err{Code: events.CodePayloadMissing, Msg: err.Error()}
	}
	if err != nil {
		return nil, &events.Err{Code: events.CodeMalformedQuery, Msg: err.Error()}
	}
	out := nats.NewMsg("")
	out.Header.Set(hdrSize, strconv.Itoa(size))
	out.Data = part
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
