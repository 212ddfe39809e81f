package events_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/storetest"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func openStore(t *testing.T) *store.Store { return storetest.Open(t).Store }

func TestFlushReturnsOnlyOnceTheRequestIsStored(t *testing.T) {
	st := openStore(t)
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	const requests, per = 32, 12
	var wg sync.WaitGroup
	for r := 0; r < requests; r++ {
		wg.Go(func() {
			req := em.NewID()
			for i := 0; i < per; i++ {
				em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK})
			}
			if err := em.Flush(context.Background(), req); err != nil {
				t.Error(err)
				return
			}
			got, err := st.ByRequest(req)
			if err != nil || len(got) != per {
				t.Errorf("after Flush: %d of %d events stored (%v)", len(got), per, err)
			}
			for i := 1; i < len(got); i++ {
				if got[i].ID.Compare(got[i-1].ID) <= 0 {
					t.Errorf("request's events stored out of emit order")
				}
			}
		})
	}
	wg.Wait()
	if head, _ := st.Head(); head != requests*per {
		t.Fatalf("head %d, want %d", head, requests*per)
	}
}

func TestEmitFillsCatalogFieldsAndRedacts(t *testing.T) {
	st := openStore(t)
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	if err := em.Redactor().Register("s3cr3t-value"); err != nil {
		t.Fatal(err)
	}
	req := em.NewID()
	em.Emit(events.Event{Kind: events.KindSecretsResolved, RequestID: req,
		Attrs: events.A("echo", "got s3cr3t-value back", "api_key", "whatever")})
	if err := em.Flush(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got, _ := st.ByRequest(req)
	e := got[0]
	if e.Boundary != events.BoundarySecrets || e.From != events.Executor || e.To != events.Secrets || e.Time.IsZero() {
		t.Fatalf("catalog fields not filled: %+v", e)
	}
	if strings.Contains(e.Attrs.Get("echo"), "s3cr3t") || !strings.Contains(e.Attrs.Get("api_key"), "[REDACTED:key:") {
		t.Fatalf("not redacted: %v", e.Attrs)
	}
}

func TestInvalidEventFailsOnlyItsOwnRequest(t *testing.T) {
	st := openStore(t)
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	bad, good := em.NewID(), em.NewID()
	em.Emit(events.Event{Kind: "no.such.kind", RequestID: bad})
	em.Emit(events.Event{Kind: events.KindToolStarted, RequestID: good})
	var rej *events.Err
	if err := em.Flush(context.Background(), bad); !errors.As(err, &rej) || rej.Code != events.CodeInvalidEvent {
		t.Fatalf("Flush(bad) = %v, want InvalidEvent", err)
	}
	if err := em.Flush(context.Background(), good); err != nil {
		t.Fatalf("Flush(good) = %v", err)
	}
}

func TestFlushReportsAnUnwritableLog(t *testing.T) {
	st := openStore(t)
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	st.Close() // the log can no longer be written
	req := em.NewID()
	em.Emit(events.Event{Kind: events.KindToolStarted, RequestID: req})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var rej *events.Err
	if err := em.Flush(ctx, req); !errors.As(err, &rej) || rej.Code != events.CodeLogUnavailable {
		t.Fatalf("Flush on a closed log = %v, want LogUnavailable", err)
	}
	em.Close(ctx)
	if err := em.Flush(ctx, em.Emit(events.Event{Kind: events.KindToolStarted, RequestID: req})); err != nil {
		// Flush of an unknown request id (an event id here) is nil; the
		// request's own state carries the close error.
		t.Fatal(err)
	}
	if err := em.Flush(ctx, req); !errors.Is(err, events.ErrEmitterClosed) {
		t.Fatalf("emit after close: Flush = %v, want ErrEmitterClosed", err)
	}
}

// batchCounter is an Appender that counts the batches it is sent.
type batchCounter struct {
	mu      sync.Mutex
	batches [][]string // kinds per batch
}

func (b *batchCounter) Append(_ context.Context, evs []events.Event) ([]uint64, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var kinds []string
	seqs := make([]uint64, len(evs))
	for i := range evs {
		seqs[i] = uint64(len(b.batches)*1000 + i + 1)
		kinds = append(kinds, evs[i].Kind)
	}
	b.batches = append(b.batches, kinds)
	return seqs, nil
}

// fakeTimers is a clock whose timers fire when the test says.
type fakeTimers struct {
	mu     sync.Mutex
	timers []*fakeTimer
}

type fakeTimer struct {
	f       func()
	stopped bool
}

func (t *fakeTimer) Stop() bool { was := !t.stopped; t.stopped = true; return was }

func (c *fakeTimers) after(_ time.Duration, f func()) events.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{f: f}
	c.timers = append(c.timers, t)
	return t
}

// armed takes the timers armed so far.
func (c *fakeTimers) armed() []*fakeTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	ts := c.timers
	c.timers = nil
	return ts
}

// fire runs the timers of ts that were not stopped.
func fire(ts []*fakeTimer) {
	for _, t := range ts {
		if !t.stopped {
			t.stopped = true
			t.f()
		}
	}
}

// One request, one commit: a request's Flush sends its events at once, and
// the linger timer its first event armed is stopped, so it cannot fire
// into the next request's events and send them in a commit of their own
// (it did: calls averaged 1.78 commits, issue 32).
func TestLingerTimerDoesNotSplitTheNextRequest(t *testing.T) {
	app := &batchCounter{}
	clock := &fakeTimers{}
	em := events.NewEmitter(app, events.EmitterOptions{Logger: quiet, AfterFunc: clock.after, Linger: time.Hour})
	defer em.Close(context.Background())
	ctx := context.Background()
	a := em.NewID()
	em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: a, Outcome: events.OK})
	em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: a, Outcome: events.OK})
	if err := em.Flush(ctx, a); err != nil {
		t.Fatal(err)
	}
	first := clock.armed()
	for _, tm := range first {
		if !tm.stopped {
			t.Fatal("the first request's linger timer is still armed after its Flush sent its events")
		}
	}
	b := em.NewID()
	em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: b, Outcome: events.OK})
	fire(first) // the first request's linger timer comes due in the second request
	em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: b, Outcome: events.OK})
	if err := em.Flush(ctx, b); err != nil {
		t.Fatal(err)
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	if len(app.batches) != 2 {
		t.Fatalf("two requests took %d commits: %v", len(app.batches), app.batches)
	}
}
