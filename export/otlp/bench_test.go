package otlp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/store"
	"github.com/tracebridge/tracebridge/store/storetest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// storeLog reads a store directly (no hub) as the exporter's Log.
type storeLog struct{ st *store.Store }

func (l storeLog) Follow(context.Context, uint64, func(events.Event) error) error { return nil }
func (l storeLog) Range(_ context.Context, from uint64, limit int) ([]events.Event, uint64, error) {
	evs, err := l.st.Range(from, limit)
	next := from
	if len(evs) > 0 {
		next = evs[len(evs)-1].Seq + 1
	}
	return evs, next, err
}
func (l storeLog) ByRequest(_ context.Context, id events.ID) ([]events.Event, error) {
	return l.st.ByRequest(id)
}
func (l storeLog) Head(context.Context) (uint64, events.Hash, error) {
	seq, h := l.st.Head()
	return seq, h, nil
}

// counting is a span exporter that only counts (the network is not what
// is measured here).
type counting struct{ spans atomic.Int64 }

func (c *counting) ExportSpans(_ context.Context, s []sdktrace.ReadOnlySpan) error {
	c.spans.Add(int64(len(s)))
	return nil
}
func (c *counting) Shutdown(context.Context) error { return nil }

// BenchmarkExportBacklog exports a whole backlog (requests of 50 events:
// a workspace call whose host round trip repeats) from a store: spans/s and
// events/s, reading and building included, sending excluded.
func BenchmarkExportBacklog(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			fx, err := storetest.Build(n)
			if err != nil {
				b.Fatal(err)
			}
			head, _ := fx.Store.Head()
			var spans int64
			for b.Loop() {
				c := &counting{}
				x := &Exporter{Log: storeLog{fx.Store}, Spans: c, State: filepath.Join(b.TempDir(), "otlp.json")}
				if _, err := x.Backfill(context.Background(), 0); err != nil {
					b.Fatal(err)
				}
				spans = c.spans.Load()
			}
			b.ReportMetric(float64(spans)*float64(b.N)/b.Elapsed().Seconds(), "spans/s")
			b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIngestWithExporter is durable ingest into a hub (64 concurrent
// requests of 12 events each, flushed) with the OTLP exporter following the
// log in the same process, and without it: what exporting costs the append
// path. The exporter sends to a counting exporter (no network).
func BenchmarkIngestWithExporter(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("exporter=%v", on), func(b *testing.B) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			node, err := hub.Open(ctx, hub.Options{Dir: hub.DataDir(filepath.Join(b.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			defer node.Close()
			em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
			defer em.Close(context.Background())
			c := &counting{}
			if on {
				x := &Exporter{Log: node, Spans: c, State: filepath.Join(b.TempDir(), "otlp.json"), FlushEvery: 100 * time.Millisecond}
				go x.Run(ctx)
			}
			kinds := []string{events.KindMCPRequestReceived, events.KindExecutorStarted, events.KindExecutorCatalog, events.KindPolicyDecided,
				events.KindToolStarted, events.KindToolCompleted, events.KindExecutorAudit}
			var next atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			for range 64 {
				wg.Go(func() {
					for next.Add(1) <= int64(b.N) {
						req := em.NewID()
						for i := 0; i < 11; i++ {
							em.Emit(events.Event{Kind: kinds[min(i, len(kinds)-1)], RequestID: req, Outcome: events.OK,
								Attrs: events.A("tool", "bench", "method", "tools/call")})
						}
						em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK})
						if err := em.Flush(ctx, req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.ReportMetric(float64(b.N*12)/b.Elapsed().Seconds(), "events/s")
			b.ReportMetric(0, "ns/op")
		})
	}
}
