package projections

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// Log is what the projector reads its events from and keeps its state in:
// the store.
type Log interface {
	Range(from uint64, limit int) ([]events.Event, error)
	Get(seq uint64) (events.Event, bool, error)
	Head() (uint64, events.Hash)
	UpdateViews(fn func(store.ViewTx) error) error
	ReadViews(fn func(store.ViewTx) error) error
}

// Checkpoint is where a projection's state stands in the log.
type Checkpoint struct {
	Seq     uint64      `json:"seq"`
	Hash    events.Hash `json:"hash"`
	Version int         `json:"version"`
	Applied uint64      `json:"applied"` // events folded since the last rebuild
	Unknown uint64      `json:"unknown"` // events of kinds this build does not know (counted, not fatal)
}

// Progress is told how far a catch-up or rebuild got: done of total seqs.
type Progress func(done, total uint64)

// metaView holds the checkpoints, keyed by projection name.
const metaView = "projector"

// chunk is how many events one transaction folds.
const chunk = 8192

// Projector keeps projections up to date with the log.
type Projector struct {
	log   Log
	projs []Projection
	mu    sync.Mutex // one catch-up or rebuild at a time
}

// New returns a projector of projs (every projection when none).
func New(log Log, projs ...Projection) *Projector {
	if len(projs) == 0 {
		projs = All()
	}
	return &Projector{log: log, projs: projs}
}

// Checkpoints returns every projection's checkpoint.
func (p *Projector) Checkpoints() (map[string]Checkpoint, error) {
	var cps map[string]Checkpoint
	err := p.log.ReadViews(func(tx store.ViewTx) (err error) {
		cps, err = p.readCheckpoints(tx)
		return err
	})
	return cps, err
}

func (p *Projector) readCheckpoints(tx store.ViewTx) (map[string]Checkpoint, error) {
	meta, err := tx.View(metaView)
	if err != nil {
		return nil, err
	}
	cps := map[string]Checkpoint{}
	for _, pr := range p.projs {
		var cp Checkpoint
		if _, err := getJSON(meta, []byte(pr.Name()), &cp); err != nil {
			return nil, fmt.Errorf("projection %s: checkpoint: %w", pr.Name(), err)
		}
		cps[pr.Name()] = cp
	}
	return cps, nil
}

// CatchUp folds every event after each projection's checkpoint and returns
// how many seqs it read. A projection whose version changed, or whose
// checkpoint names an event the log no longer has, is rebuilt.
func (p *Projector) CatchUp(ctx context.Context, progress Progress) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	stale, err := p.stale()
	if err != nil {
		return 0, err
	}
	if len(stale) > 0 {
		if err := p.reset(stale); err != nil {
			return 0, err
		}
	}
	return p.catchUp(ctx, progress)
}

// Rebuild recomputes the named projections (every one when names is
// empty) from seq 1.
func (p *Projector) Rebuild(ctx context.Context, names []string, progress Progress) (uint64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(names) == 0 {
		names = Names()
	}
	for _, n := range names {
		if p.byName(n) == nil {
			return 0, fmt.Errorf("no projection %q; there are %v", n, Names())
		}
	}
	if err := p.reset(names); err != nil {
		return 0, err
	}
	return p.catchUp(ctx, progress)
}

func (p *Projector) byName(name string) Projection {
	for _, pr := range p.projs {
		if pr.Name() == name {
			return pr
		}
	}
	return nil
}

// stale names the projections whose state must be rebuilt.
func (p *Projector) stale() ([]string, error) {
	cps, err := p.Checkpoints()
	if err != nil {
		return nil, err
	}
	head, _ := p.log.Head()
	var out []string
	for _, pr := range p.projs {
		cp := cps[pr.Name()]
		if cp.Seq == 0 {
			continue
		}
		if cp.Version != pr.Version() || cp.Seq > head {
			out = append(out, pr.Name())
			continue
		}
		e, ok, err := p.log.Get(cp.Seq)
		if err != nil {
			return nil, err
		}
		if !ok || e.Hash != cp.Hash {
			out = append(out, pr.Name())
		}
	}
	return out, nil
}

// reset drops the named projections' state and checkpoints.
func (p *Projector) reset(names []string) error {
	return p.log.UpdateViews(func(tx store.ViewTx) error {
		meta, err := tx.View(metaView)
		if err != nil {
			return err
		}
		for _, n := range names {
			if err := tx.Drop(n); err != nil {
				return err
			}
			if err := meta.Delete([]byte(n)); err != nil {
				return err
			}
		}
		return nil
	})
}

func (p *Projector) catchUp(ctx context.Context, progress Progress) (uint64, error) {
	cps, err := p.Checkpoints()
	if err != nil {
		return 0, err
	}
	from := ^uint64(0)
	for _, cp := range cps {
		from = min(from, cp.Seq+1)
	}
	start := from
	head, _ := p.log.Head()
	// The next chunk is read and decoded while this one is folded and
	// written: the two take about as long, and bbolt lets a read
	// transaction run beside the write.
	ahead := make(chan chunkRead, 1)
	readAhead := func(from uint64) {
		go func() {
			evs, err := p.log.Range(from, chunk)
			ahead <- chunkRead{evs, err}
		}()
	}
	pending := false
	for from <= head {
		if err := ctx.Err(); err != nil {
			if pending {
				<-ahead
			}
			return from - start, err
		}
		if !pending {
			readAhead(from)
		}
		r := <-ahead
		pending = false
		evs, err := r.evs, r.err
		if err != nil {
			return from - start, err
		}
		if len(evs) == 0 {
			break
		}
		if after := evs[len(evs)-1].Seq + 1; after <= head {
			readAhead(after)
			pending = true
		}
		next := maps.Clone(cps)
		err = p.log.UpdateViews(func(tx store.ViewTx) error {
			meta, err := tx.View(metaView)
			if err != nil {
				return err
			}
			for _, pr := range p.projs {
				cp := cps[pr.Name()]
				if cp.Seq >= evs[len(evs)-1].Seq {
					continue
				}
				view, err := tx.View(pr.Name())
				if err != nil {
					return err
				}
				// Fold the chunk in memory, then write each key it touched
				// once: a run's 50 events cost one B-tree write, not 50.
				o := &overlay{base: view, m: map[string][]byte{}}
				if cp, err = fold(pr, o, cp, evs); err != nil {
					return err
				}
				if err := o.flush(); err != nil {
					return err
				}
				for k, v := range o.m {
					write := view.Put
					if v == nil {
						write = func(k, _ []byte) error { return view.Delete(k) }
					}
					if err := write([]byte(k), v); err != nil {
						return err
					}
				}
				if err := putJSON(meta, []byte(pr.Name()), &cp); err != nil {
					return err
				}
				next[pr.Name()] = cp
			}
			return nil
		})
		if err != nil { // rolled back: nothing of this chunk was kept
			if pending {
				<-ahead
			}
			return from - start, err
		}
		cps = next
		from = evs[len(evs)-1].Seq + 1
		if progress != nil {
			progress(from-1, max(head, from-1))
		}
		// A long catch-up (a rebuild) goes on to what was appended while it
		// ran; a short one ends at the head it began with. Chasing the head
		// under load made one views commit — two fdatasyncs — of each few
		// events that arrived during the last (issue 47: ~33 a second under
		// the gateway benchmark, against the loop's 10); the next catch-up,
		// or a query's, takes them.
		if from > head && from-start >= chunk {
			head, _ = p.log.Head()
		}
	}
	return from - start, nil
}

// chunkRead is a chunk of the log read ahead.
type chunkRead struct {
	evs []events.Event
	err error
}

// fold applies the events after cp to one projection.
func fold(pr Projection, kv KV, cp Checkpoint, evs []events.Event) (Checkpoint, error) {
	cp.Version = pr.Version()
	for i := range evs {
		e := &evs[i]
		if e.Seq <= cp.Seq {
			continue
		}
		if _, known := events.Lookup(e.Kind); !known {
			cp.Unknown++
		}
		if err := pr.Apply(kv, e); err != nil {
			return cp, fmt.Errorf("projection %s at seq %d (%s): %w", pr.Name(), e.Seq, e.Kind, err)
		}
		cp.Seq, cp.Hash = e.Seq, e.Hash
		cp.Applied++
	}
	return cp, nil
}

// ErrNoView means a query named no projection.
var ErrNoView = errors.New("no such view")

// Query answers q from the named view. A projector that can write catches
// up first, so a query sees every event committed before it; one on a
// read-only store folds the events after the checkpoint in memory.
func (p *Projector) Query(ctx context.Context, q Query, writable bool) ([]json.RawMessage, error) {
	pr := p.byName(q.View)
	if pr == nil {
		return nil, fmt.Errorf("%w %q: want one of %v", ErrNoView, q.View, Names())
	}
	if writable {
		if _, err := p.CatchUp(ctx, nil); err != nil {
			return nil, err
		}
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 100
	}
	out := []json.RawMessage{}
	err := p.log.ReadViews(func(tx store.ViewTx) error {
		base, err := tx.View(pr.Name())
		if err != nil {
			return err
		}
		view := store.View(base)
		if !writable {
			if view, err = p.overlay(tx, pr, base); err != nil {
				return err
			}
		}
		emit := func(k, v []byte) error {
			js, keep, err := pr.Present(k, v, q)
			if err != nil {
				return fmt.Errorf("view %s: %w", pr.Name(), err)
			}
			if keep {
				out = append(out, js)
			}
			if len(out) >= limit {
				return store.ErrStop
			}
			return nil
		}
		if q.Key != "" {
			k, err := pr.Key(q.Key)
			if err != nil {
				return err
			}
			if v := view.Get(k); v != nil {
				return emit(k, v)
			}
			return nil
		}
		return view.Reverse(emit)
	})
	return out, err
}

// overlay folds the events a read-only store has past pr's checkpoint
// into memory over its stored state.
func (p *Projector) overlay(tx store.ViewTx, pr Projection, base store.View) (store.View, error) {
	cps, err := p.readCheckpoints(tx)
	if err != nil {
		return nil, err
	}
	cp := cps[pr.Name()]
	o := &overlay{base: base, m: map[string][]byte{}}
	if cp.Seq > 0 && cp.Version != pr.Version() {
		o.base, cp = emptyBase{}, Checkpoint{}
	}
	for from := cp.Seq + 1; ; {
		evs, err := p.log.Range(from, chunk)
		if err != nil || len(evs) == 0 {
			return o, err
		}
		if cp, err = fold(pr, o, cp, evs); err != nil {
			return nil, err
		}
		from = evs[len(evs)-1].Seq + 1
	}
}
