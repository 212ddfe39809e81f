package projections

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/replay"
	"github.com/tracebridge/tracebridge/store"
)

// randomStream returns n events of random catalogued kinds over a few
// requests, sessions, proposals and workspaces, with random failures.
func randomStream(r *rand.Rand, ids *events.IDSource, n int) []events.Event {
	pick := func(xs []events.ID) events.ID { return xs[r.IntN(len(xs))] }
	var reqs, sess []events.ID
	for range 6 {
		reqs = append(reqs, ids.New())
	}
	for range 3 {
		sess = append(sess, ids.New())
	}
	kinds := events.Kinds()
	codes := []events.Code{events.CodePolicyDenied, events.CodePipeUnavailable, events.CodeDrift, events.CodeApprovalTimeout, events.CodeToolError}
	t0 := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	out := make([]events.Event, 0, n)
	for i := range n {
		k := kinds[r.IntN(len(kinds))]
		e := events.Event{ID: ids.New(), Time: t0.Add(time.Duration(i) * time.Millisecond), Kind: k.Kind, Boundary: k.Boundary,
			From: k.From, To: k.To, Outcome: events.OK, DurationMs: float64(r.IntN(5)), Attrs: events.A()}
		if r.IntN(5) > 0 {
			e.RequestID = pick(reqs)
		}
		if r.IntN(3) > 0 {
			e.SessionID = pick(sess)
		}
		if r.IntN(8) == 0 {
			e.Code = codes[r.IntN(len(codes))]
			e.Outcome = events.OutcomeOf(e.Code)
		}
		for key, vals := range map[string][]string{
			"tool": {"", "regex", "bm25"}, "method": {"", "tools/call", "initialize"}, "proposal": {"", "p1", "p2"},
			"state": {"", "pending", "approved"}, "client": {"", "claude/1"}, "protocolVersion": {"", "2025-06-18"},
			"workspace": {"/w"}, "content": {"# review"}, "mode": {"replace", "append"}, "by": {"", "alice"},
			"envelope": {`{"tool":"regex"}`, "not json"}, "error": {"", "it broke"}, "preview": {"", "--- a\n+++ b\n"},
		} {
			if v := vals[r.IntN(len(vals))]; v != "" {
				e.Attrs.Set(key, v)
			}
		}
		out = append(out, e)
	}
	return out
}

// dump reads every view and checkpoint of the store.
func dump(t *testing.T, st *store.Store) map[string]map[string]string {
	t.Helper()
	out := map[string]map[string]string{}
	err := st.ReadViews(func(tx store.ViewTx) error {
		for _, name := range append(Names(), metaView) {
			v, err := tx.View(name)
			if err != nil {
				return err
			}
			m := map[string]string{}
			if err := v.ForEach(func(k, v []byte) error { m[string(k)] = string(v); return nil }); err != nil {
				return err
			}
			out[name] = m
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRebuildEqualsIncremental: for random streams appended in random
// chunks, with the store reopened now and then, the state the projector
// built incrementally equals a rebuild from seq 1, and every run in the
// runs view says what replay.Judge says of the same request.
func TestRebuildEqualsIncremental(t *testing.T) {
	ctx := context.Background()
	for seed := range 25 {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			ids := events.NewIDSource(nil, nil)
			path := filepath.Join(t.TempDir(), "events.db")
			st, err := store.Open(path, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer func() { st.Close() }()
			stream := randomStream(r, ids, 50+r.IntN(400))
			for len(stream) > 0 {
				n := min(len(stream), 1+r.IntN(60))
				if _, err := st.Append(ctx, stream[:n]); err != nil {
					t.Fatal(err)
				}
				stream = stream[n:]
				if r.IntN(3) == 0 {
					if _, err := New(st).CatchUp(ctx, nil); err != nil {
						t.Fatal(err)
					}
				}
				if r.IntN(6) == 0 {
					st.Close()
					if st, err = store.Open(path, store.Options{}); err != nil {
						t.Fatal(err)
					}
				}
			}
			p := New(st)
			if _, err := p.CatchUp(ctx, nil); err != nil {
				t.Fatal(err)
			}
			incremental := dump(t, st)
			var last uint64
			if _, err := p.Rebuild(ctx, nil, func(done, total uint64) { last = done }); err != nil {
				t.Fatal(err)
			}
			head, _ := st.Head()
			if last != head {
				t.Errorf("rebuild progress ended at %d, head %d", last, head)
			}
			rebuilt := dump(t, st)
			if !reflect.DeepEqual(incremental, rebuilt) {
				for name := range rebuilt {
					if !reflect.DeepEqual(incremental[name], rebuilt[name]) {
						t.Errorf("view %s: incremental and rebuilt differ:\n%v\n%v", name, incremental[name], rebuilt[name])
					}
				}
			}
			if len(rebuilt["runs"]) == 0 || len(rebuilt["sessions"]) == 0 {
				t.Fatalf("the stream built no runs or sessions: %v", rebuilt)
			}
			checkRunsMatchReplay(t, p, st)
		})
	}
}

func checkRunsMatchReplay(t *testing.T, p *Projector, st *store.Store) {
	t.Helper()
	rows, err := p.Query(context.Background(), Query{View: "runs", Limit: 1000}, true)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		var s replay.Summary
		if err := json.Unmarshal(row, &s); err != nil {
			t.Fatal(err)
		}
		evs, err := st.ByRequest(s.RequestID)
		if err != nil {
			t.Fatal(err)
		}
		run := replay.Judge(s.RequestID, evs)
		if run.Status != s.Status || run.Verdict != s.Verdict || len(evs) != s.Events {
			t.Errorf("run %s: projection says %s %+v (%d events), replay says %s %+v (%d events)",
				s.RequestID, s.Status, s.Verdict, s.Events, run.Status, run.Verdict, len(evs))
		}
	}
}

// TestReadOnlyOverlay: a reader of a store no hub holds sees the events
// past the stored checkpoint, folded in memory, exactly as a catch-up
// would store them.
func TestReadOnlyOverlay(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	ids := events.NewIDSource(nil, nil)
	path := filepath.Join(t.TempDir(), "events.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stream := randomStream(r, ids, 300)
	if _, err := st.Append(ctx, stream[:150]); err != nil {
		t.Fatal(err)
	}
	if _, err := New(st).CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := st.Append(ctx, stream[150:]); err != nil {
		t.Fatal(err)
	}
	st.Close()

	ro, err := store.Open(path, store.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var got map[string][]json.RawMessage = map[string][]json.RawMessage{}
	for _, name := range Names() {
		if got[name], err = New(ro).Query(ctx, Query{View: name, Limit: 1000}, false); err != nil {
			t.Fatal(err)
		}
	}
	ro.Close()
	rw, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	for _, name := range Names() {
		want, err := New(rw).Query(ctx, Query{View: name, Limit: 1000}, true)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got[name], want) {
			t.Errorf("view %s read-only (%d rows) differs from caught up (%d rows)", name, len(got[name]), len(want))
		}
	}
}

// TestUnknownKindsCounted: events of kinds this build does not know (a log
// written by a newer version) are counted, and folding goes on.
func TestUnknownKindsCounted(t *testing.T) {
	ids := events.NewIDSource(nil, nil)
	req := ids.New()
	evs := []events.Event{
		{Seq: 1, Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK},
		{Seq: 2, Kind: "future.thing.happened", RequestID: req, Outcome: events.OK},
		{Seq: 3, Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK},
	}
	kv := &overlay{base: emptyBase{}, m: map[string][]byte{}}
	cp, err := fold(runs{}, kv, Checkpoint{}, evs)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Unknown != 1 || cp.Applied != 3 || cp.Seq != 3 {
		t.Fatalf("checkpoint %+v", cp)
	}
	var f replay.Fold
	if err := json.Unmarshal(kv.Get(req[:]), &f); err != nil {
		t.Fatal(err)
	}
	if s := f.Summary(); s.Status != replay.StatusOK || s.Events != 3 {
		t.Fatalf("run %+v", s)
	}
}

// TestStaleCheckpointRebuilds: a checkpoint that names an event the log
// does not have (the store was replaced by another) makes the projector
// rebuild rather than fold on top of foreign state.
func TestStaleCheckpointRebuilds(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	ids := events.NewIDSource(nil, nil)
	st, err := store.Open(filepath.Join(t.TempDir(), "events.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Append(ctx, randomStream(r, ids, 100)); err != nil {
		t.Fatal(err)
	}
	p := New(st)
	if _, err := p.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	want := dump(t, st)
	// Forge the runs checkpoint as if built from another log.
	err = st.UpdateViews(func(tx store.ViewTx) error {
		meta, _ := tx.View(metaView)
		var cp Checkpoint
		getJSON(meta, []byte("runs"), &cp)
		cp.Hash[0] ^= 1
		runsView, _ := tx.View("runs")
		runsView.Put([]byte("junk"), []byte("{}"))
		return putJSON(meta, []byte("runs"), &cp)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.CatchUp(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, st); !reflect.DeepEqual(got, want) {
		t.Fatalf("after a foreign checkpoint the runs view was not rebuilt:\n%v\n%v", got["runs"], want["runs"])
	}
}
