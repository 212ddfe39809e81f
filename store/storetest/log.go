package storetest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	berrors "go.etcd.io/bbolt/errors"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// Log is a real store and an emitter writing to it, for tests.
type Log struct {
	Store   *store.Store
	Emitter *events.Emitter
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Open opens a fresh store in t's temp dir and an emitter on it. At
// cleanup, after the test's own cleanups, it flushes the emitter and checks
// the invariants every store keeps — the hash chain verifies and seqs run
// 1…head without gaps — then closes both (bbolt's btesting is the model).
func Open(t testing.TB) *Log {
	t.Helper()
	st, err := store.Open(filepath.Join(t.TempDir(), "events.db"), store.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	l := &Log{Store: st, Emitter: events.NewEmitter(st, events.EmitterOptions{Logger: quiet})}
	t.Cleanup(func() {
		// A test may have made the log refuse appends on purpose: what the
		// emitter could not store is that test's business; the chain is ours.
		if err := l.Emitter.Close(context.Background()); err != nil {
			t.Logf("emitter at cleanup: %v", err)
		}
		rep, err := st.Verify()
		switch {
		case errors.Is(err, berrors.ErrDatabaseNotOpen): // the test closed it itself
			return
		case err != nil:
			t.Errorf("verify: %v", err)
		case !rep.OK():
			t.Errorf("invariant: the chain does not verify: %s", rep)
		default:
			if head, _ := st.Head(); rep.Events != head {
				t.Errorf("invariant: %d events stored, head is %d", rep.Events, head)
			}
		}
		if err := st.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return l
}

// Kinds lists evs as kind or kind(Code): what a test compares a run with.
func Kinds(evs []events.Event) []string {
	ks := make([]string, 0, len(evs))
	for _, e := range evs {
		k := e.Kind
		if e.Code != "" {
			k += "(" + string(e.Code) + ")"
		}
		ks = append(ks, k)
	}
	return ks
}
