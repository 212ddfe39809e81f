package events_test

import (
	"context"
	"errors"
	"github.com/tracebridge/tracebridge/store/storetest"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
