// Package storetest gives other packages' tests a real store: Open (a fresh store
// and an emitter on it, the chain verified and the seqs checked when the test
// ends), Kinds (a run as the kinds a test compares), and Build (a large
// synthetic store for benchmarks, built once per process).
package storetest

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// Chain is one synthetic tool call of 50 events that follows the expected
// chain: a workspace call whose host round trip repeats.
var Chain = func() []string {
	head := []string{events.KindMCPRequestReceived, events.KindExecutorStarted, events.KindExecutorCatalog, events.KindPolicyDecided,
		events.KindSecretsResolved, events.KindToolStarted}
	trip := []string{events.KindPipeAttempt, events.KindPipeConnected, events.KindPipeRequestSent, events.KindHostReceived,
		events.KindHostDispatched, events.KindHostResponseSent, events.KindPipeResponseReceived}
	tail := []string{events.KindToolCompleted, events.KindExecutorAudit, events.KindMCPResponseSent}
	out := head
	for len(out)+len(trip)+len(tail) <= 50 {
		out = append(out, trip...)
	}
	for len(out)+len(tail) < 50 {
		out = append(out, events.KindHostDispatched)
	}
	return append(out, tail...)
}()

// Fixture is a store of about N events in requests of 50, 64 requests
// interleaved at a time as concurrent calls are.
type Fixture struct {
	Store    *store.Store
	Requests []events.ID
	Sessions []events.ID
}

var (
	mu       sync.Mutex
	fixtures = map[int]*Fixture{}
)

// Build returns a cached fixture of n events (built once per process).
func Build(n int) (*Fixture, error) {
	mu.Lock()
	defer mu.Unlock()
	if fx := fixtures[n]; fx != nil {
		return fx, nil
	}
	dir, err := os.MkdirTemp("", "tb-fixture-")
	if err != nil {
		return nil, err
	}
	st, err := store.Open(filepath.Join(dir, "events.db"), store.Options{MaxBatch: 8192})
	if err != nil {
		return nil, err
	}
	// Unlinked at once: the open file lives until the process ends, and
	// no fixture is left behind in the temp dir (they are GBs).
	os.RemoveAll(dir)
	fx := &Fixture{Store: st}
	ids := events.NewIDSource(nil, nil)
	t0 := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	const inflight = 64
	for len(fx.Requests)*len(Chain) < n {
		sess := ids.New()
		fx.Sessions = append(fx.Sessions, sess)
		group := make([]events.ID, inflight)
		for i := range group {
			group[i] = ids.New()
		}
		fx.Requests = append(fx.Requests, group...)
		var batch []events.Event
		for step, kind := range Chain {
			info, _ := events.Lookup(kind)
			for _, req := range group {
				batch = append(batch, events.Event{ID: ids.New(), Time: t0.Add(time.Duration(len(fx.Requests)*50+step) * time.Millisecond),
					Kind: kind, Boundary: info.Boundary, From: info.From, To: info.To, RequestID: req, SessionID: sess,
					Outcome: events.OK, DurationMs: 0.1, Attrs: events.A("tool", "get_selection", "command", "get_selection")})
			}
		}
		if _, err := st.Append(context.Background(), batch); err != nil {
			return nil, err
		}
	}
	fixtures[n] = fx
	return fx, nil
}
