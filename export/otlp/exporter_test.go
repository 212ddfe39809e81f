package otlp

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// refusing is an endpoint that refuses every batch.
type refusing struct{ tries int }

func (r *refusing) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error {
	r.tries++
	return errors.New("503 from the collector")
}
func (r *refusing) Shutdown(context.Context) error { return nil }

// A backfill sends each answered run once (a run not answered yet waits),
// under the trace id of its request, and moves the checkpoint past them;
// the next backfill from the checkpoint sends nothing; an endpoint that
// refuses leaves the checkpoint where it was.
func TestBackfillSendsAnsweredRunsOnceAndKeepsTheCheckpoint(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(data, "d")), Role: hub.Elect, Name: "otlp-test"})
	em := events.NewEmitter(node, events.EmitterOptions{})
	run := func(answered bool) events.ID {
		req := events.NewID()
		attrs := events.A("method", "tools/call", "tool", "regex_text_search")
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: attrs})
		if answered {
			em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK, Attrs: attrs})
		}
		return req
	}
	a, b := run(true), run(true)
	run(false)
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(data, "export", "otlp.json")

	refuser := &refusing{}
	x := &Exporter{Log: node, Spans: refuser, State: state, Attempts: 2}
	if _, err := x.Backfill(ctx, 0); err == nil || refuser.tries != 2 {
		t.Fatalf("a refusing endpoint: %v after %d tries", err, refuser.tries)
	}
	if st, _ := ReadState(state); st.Seq != 0 {
		t.Fatalf("the checkpoint moved to %d though nothing was accepted", st.Seq)
	}

	mem := tracetest.NewInMemoryExporter()
	x = &Exporter{Log: node, Spans: mem, State: state, Attempts: 2}
	n, err := x.Backfill(ctx, 0)
	if err != nil || n != 2 {
		t.Fatalf("backfill: %d runs, %v; want the 2 answered", n, err)
	}
	traces := map[string]bool{}
	for _, s := range mem.GetSpans() {
		traces[s.SpanContext.TraceID().String()] = true
	}
	if len(traces) != 2 || !traces[traceID(a).String()] || !traces[traceID(b).String()] {
		t.Fatalf("traces sent: %v", traces)
	}
	st, err := ReadState(state)
	if err != nil || st.Seq == 0 || st.Runs != 2 {
		t.Fatalf("checkpoint %+v %v", st, err)
	}
	mem.Reset()
	if n, err := (&Exporter{Log: node, Spans: mem, State: state}).Backfill(ctx, st.Seq); err != nil || n != 0 || len(mem.GetSpans()) != 0 {
		t.Fatalf("from the checkpoint: %d runs, %d spans, %v", n, len(mem.GetSpans()), err)
	}
}

// ctxBound is an endpoint that takes a batch only while the context of
// the call is alive (as a network exporter does).
type ctxBound struct{ mem *tracetest.InMemoryExporter }

func (c ctxBound) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return c.mem.ExportSpans(ctx, spans)
}
func (c ctxBound) Shutdown(context.Context) error { return nil }

// Issue 46: a process that stops cleanly before its exporter's first tick
// (a client-launched bridge answering a few requests) sends its runs on
// the way out, within FinalFlush, and moves the checkpoint; the next
// process does not send them again.
func TestAStoppingProcessExportsItsLastRuns(t *testing.T) {
	data := t.TempDir()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(data, "d")), Role: hub.Elect, Name: "otlp-test"})
	em := events.NewEmitter(node, events.EmitterOptions{})
	state := filepath.Join(data, "export", "otlp.json")
	mem := tracetest.NewInMemoryExporter()
	x := &Exporter{Log: node, Spans: ctxBound{mem}, State: state, FlushEvery: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.Run(ctx) }()
	req := events.NewID()
	attrs := events.A("method", "tools/call", "tool", "regex_text_search")
	em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: attrs})
	em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK, Attrs: attrs})
	if err := em.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the follower has read them; no tick for an hour
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(mem.GetSpans()); n == 0 {
		t.Fatal("the stopping process exported nothing: its runs waited for the next process holding the hub")
	}
	st, _ := ReadState(state)
	if st.Seq == 0 || st.Runs != 1 {
		t.Fatalf("the checkpoint did not move past the run: %+v", st)
	}
	mem.Reset()
	if n, err := (&Exporter{Log: node, Spans: mem, State: state}).Backfill(context.Background(), st.Seq); err != nil || n != 0 {
		t.Fatalf("the next process sends %d runs again (%v)", n, err)
	}
}
