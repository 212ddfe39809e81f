package hub

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// backend is what a Node does through its current link: to the store
// directly (this process is the hub, or reads a store no hub holds) or to a
// hub over NATS.
type backend interface {
	Append(ctx context.Context, evs []events.Event) ([]uint64, error)
	rangeRecords(ctx context.Context, from uint64, limit int) (recs [][]byte, next uint64, err error)
	byRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	bySession(ctx context.Context, id events.ID, from uint64, limit int) ([]events.Event, error)
	head(ctx context.Context) (uint64, events.Hash, error)
	verify(ctx context.Context, cps []store.Checkpoint) (store.Report, error)
	checkpoint(ctx context.Context) (store.Checkpoint, error)
	view(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
	rebuild(ctx context.Context, names []string, progress projections.Progress) (uint64, error)
	putPayloads(ctx context.Context, ps []string) error
	payload(ctx context.Context, sum events.Hash) (string, error)
	// conn is the NATS connection live events arrive on; nil offline.
	conn() *nats.Conn
	// hubInfo describes the hub in use; ok is false offline.
	hubInfo() (Info, bool)
	dead() bool
	close() error
}

// local serves from a store this process holds: as the hub, or read-only.
type local struct {
	st  *store.Store
	hub *Hub // nil when read-only
	key ed25519.PrivateKey
	now func() time.Time
}

func (l *local) Append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	if l.hub != nil {
		return l.hub.append(ctx, evs)
	}
	return l.st.Append(ctx, evs)
}

func (l *local) rangeRecords(_ context.Context, from uint64, limit int) ([][]byte, uint64, error) {
	return l.st.RangeRecords(max(from, 1), limit, events.MaxBatchBytes-4096)
}

func (l *local) byRequest(_ context.Context, id events.ID) ([]events.Event, error) {
	return l.st.ByRequest(id)
}

func (l *local) bySession(_ context.Context, id events.ID, from uint64, limit int) ([]events.Event, error) {
	return l.st.BySession(id, from, limit)
}

func (l *local) head(context.Context) (uint64, events.Hash, error) {
	seq, hash := l.st.Head()
	return seq, hash, nil
}

func (l *local) verify(_ context.Context, cps []store.Checkpoint) (store.Report, error) {
	return l.st.Verify(cps...)
}

func (l *local) checkpoint(context.Context) (store.Checkpoint, error) {
	if l.key == nil {
		return store.Checkpoint{}, errors.New("no signing key")
	}
	return l.st.SignCheckpoint(l.key, l.now()), nil
}

func (l *local) view(ctx context.Context, q projections.Query) ([]json.RawMessage, error) {
	if l.hub != nil {
		return l.hub.proj.Query(ctx, q, true)
	}
	return projections.New(l.st).Query(ctx, q, false)
}

func (l *local) rebuild(ctx context.Context, names []string, progress projections.Progress) (uint64, error) {
	if l.hub == nil {
		return 0, errors.New("rebuild writes the projections, so it needs the hub; this process opened the log read-only")
	}
	return l.hub.proj.Rebuild(ctx, names, progress)
}

func (l *local) conn() *nats.Conn {
	if l.hub == nil {
		return nil
	}
	return l.hub.nc
}

func (l *local) hubInfo() (Info, bool) {
	if l.hub == nil {
		return Info{}, false
	}
	return l.hub.info, true
}

func (l *local) dead() bool { return false }

func (l *local) close() error {
	if l.hub != nil {
		return l.hub.Close()
	}
	return l.st.Close()
}

// remote talks to a hub in another process.
type remote struct {
	nc      *nats.Conn
	info    Info
	timeout time.Duration
}

func (r *remote) hubInfo() (Info, bool) { return r.info, true }

func (r *remote) dead() bool { return r.nc.IsClosed() }

func (r *remote) conn() *nats.Conn { return r.nc }

func (r *remote) close() error {
	r.nc.Close()
	return nil
}

// request sends one request and turns transport failures into
// ErrHubUnavailable and error replies into *events.Err.
func (r *remote) request(ctx context.Context, subj string, data []byte, timeout time.Duration) (*nats.Msg, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	m, err := r.nc.RequestWithContext(rctx, subj, data)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%s: %w", subj, ctx.Err()) // the caller gave up, not the hub
		}
		// No hub answered in time, or none is there: drop this link so the
		// next call elects or attaches again.
		r.nc.Close()
		return nil, fmt.Errorf("%w: %s: %v", ErrHubUnavailable, subj, err)
	}
	if err := replyError(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Append sends evs in frames under the bus payload cap, in order.
func (r *remote) Append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	recs := make([][]byte, len(evs))
	for i := range evs {
		recs[i] = events.Encode(&evs[i])
	}
	seqs := make([]uint64, 0, len(evs))
	for start := 0; start < len(recs); {
		end, size := start, 0
		for end < len(recs) && end-start < events.MaxBatchEvents {
			n := len(recs[end]) + 8
			if end > start && size+n > events.MaxBatchBytes-1024 {
				break
			}
			size += n
			end++
		}
		m, err := r.request(ctx, subjAppend, events.EncodeRecords(recs[start:end]), r.timeout)
		if err != nil {
			return nil, err
		}
		var rep appendReply
		if err := json.Unmarshal(m.Data, &rep); err != nil || len(rep.Seqs) != end-start {
			return nil, fmt.Errorf("append: bad reply from hub (%d seqs for %d events): %v", len(rep.Seqs), end-start, err)
		}
		seqs = append(seqs, rep.Seqs...)
		start = end
	}
	return seqs, nil
}

func (r *remote) queryJSON(ctx context.Context, subj string, q any, timeout time.Duration) (*nats.Msg, error) {
	var data []byte
	if q != nil {
		var err error
		if data, err = json.Marshal(q); err != nil {
			return nil, err
		}
	}
	return r.request(ctx, subj, data, timeout)
}

func (r *remote) rangeRecords(ctx context.Context, from uint64, limit int) ([][]byte, uint64, error) {
	m, err := r.queryJSON(ctx, subjRange, rangeQuery{From: from, Limit: limit}, r.timeout)
	if err != nil {
		return nil, 0, err
	}
	next, err := strconv.ParseUint(m.Header.Get(hdrNext), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("range: reply without %s", hdrNext)
	}
	recs, err := events.SplitBatch(m.Data) // the caller decodes each record once
	if err != nil {
		return nil, 0, fmt.Errorf("range: %w", err)
	}
	return recs, next, nil
}

func (r *remote) events(ctx context.Context, subj string, q idQuery) ([]events.Event, error) {
	m, err := r.queryJSON(ctx, subj, q, r.timeout)
	if err != nil {
		return nil, err
	}
	return events.DecodeBatch(m.Data)
}

func (r *remote) byRequest(ctx context.Context, id events.ID) ([]events.Event, error) {
	return r.events(ctx, subjRequest, idQuery{ID: id})
}

func (r *remote) bySession(ctx context.Context, id events.ID, from uint64, limit int) ([]events.Event, error) {
	return r.events(ctx, subjSession, idQuery{ID: id, From: from, Limit: limit})
}

func (r *remote) head(ctx context.Context) (uint64, events.Hash, error) {
	m, err := r.queryJSON(ctx, subjHead, nil, r.timeout)
	if err != nil {
		return 0, events.Hash{}, err
	}
	var h headReply
	err = json.Unmarshal(m.Data, &h)
	return h.Seq, h.Hash, err
}

func (r *remote) verify(ctx context.Context, cps []store.Checkpoint) (store.Report, error) {
	var rep store.Report
	m, err := r.queryJSON(ctx, subjVerify, verifyQuery{Checkpoints: cps}, 10*time.Minute)
	if err != nil {
		return rep, err
	}
	err = json.Unmarshal(m.Data, &rep)
	return rep, err
}

func (r *remote) checkpoint(ctx context.Context) (store.Checkpoint, error) {
	var cp store.Checkpoint
	m, err := r.queryJSON(ctx, subjCheckpoint, nil, r.timeout)
	if err != nil {
		return cp, err
	}
	err = json.Unmarshal(m.Data, &cp)
	return cp, err
}

func (r *remote) view(ctx context.Context, q projections.Query) ([]json.RawMessage, error) {
	m, err := r.queryJSON(ctx, subjView, q, r.timeout)
	if err != nil {
		return nil, err
	}
	var rows []json.RawMessage
	err = json.Unmarshal(m.Data, &rows)
	return rows, err
}

// rebuild asks the hub to rebuild and relays the progress it publishes.
func (r *remote) rebuild(ctx context.Context, names []string, progress projections.Progress) (uint64, error) {
	q := rebuildQuery{Names: names}
	if progress != nil {
		q.Progress = nats.NewInbox()
		sub, err := r.nc.Subscribe(q.Progress, func(m *nats.Msg) {
			var p progressMsg
			if json.Unmarshal(m.Data, &p) == nil {
				progress(p.Done, p.Total)
			}
		})
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrHubUnavailable, err)
		}
		defer sub.Unsubscribe()
	}
	m, err := r.queryJSON(ctx, subjRebuild, q, time.Hour)
	if err != nil {
		return 0, err
	}
	var rep rebuildReply
	err = json.Unmarshal(m.Data, &rep)
	return rep.Events, err
}
