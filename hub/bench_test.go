package hub

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// BenchmarkIngest is durable ingest through the whole path: 64 concurrent
// requests (or 1, for unloaded flush latency), each emitting 12 events and
// then flushing. path=bus emits from a
// process attached to the hub (emitter → NATS → hub writer → bbolt);
// path=hub emits from the hub process itself (emitter → writer → bbolt).
// b.N counts requests.
func BenchmarkIngest(b *testing.B) {
	for _, tc := range []struct {
		path    string
		workers int
		linger  time.Duration
	}{{"bus", 64, 0}, {"bus", 64, time.Nanosecond}, {"hub", 64, 0}, {"bus", 1, 0}, {"bus", 1, time.Nanosecond}, {"hub", 1, 0}} {
		path := tc.path
		b.Run(fmt.Sprintf("path=%s/requests=%d/linger=%v", path, tc.workers, cmp.Or(tc.linger, 2*time.Millisecond)), func(b *testing.B) {
			dir := DataDir(b.TempDir() + "/data")
			hubNode, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer hubNode.Close()
			node := hubNode
			if path == "bus" {
				if node, err = Open(context.Background(), Options{Dir: dir, Logger: quiet}); err != nil {
					b.Fatal(err)
				}
				defer node.Close()
			}
			em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet, Linger: tc.linger})
			defer em.Close(context.Background())
			workers, per := tc.workers, 12
			var next atomic.Int64
			var mu sync.Mutex
			var lat []time.Duration
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < workers; w++ {
				wg.Go(func() {
					var mine []time.Duration
					for next.Add(1) <= int64(b.N) {
						req := em.NewID()
						for i := 0; i < per; i++ {
							em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK,
								Attrs: events.A("tool", "bench", "args", `{"pattern":"foo.*bar","max":50}`)})
						}
						t0 := time.Now()
						if err := em.Flush(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
						mine = append(mine, time.Since(t0))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N*per)/b.Elapsed().Seconds(), "events/s")
			slices.Sort(lat)
			if len(lat) > 0 {
				b.ReportMetric(float64(lat[len(lat)/2])/1e3, "flush-p50-µs")
				b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)])/1e3, "flush-p99-µs")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIngestPayloads is BenchmarkIngest's bus path with one 64 KiB
// answer among each request's 12 events (distinct per request, so nothing
// deduplicates): payloads=whole keeps it in the payload store, payloads=cut
// cuts it to 512 bytes as the log did before the payload store. It reports
// events/s and the store file's bytes per event. b.N counts requests.
func BenchmarkIngestPayloads(b *testing.B) {
	for _, whole := range []bool{false, true} {
		name := map[bool]string{false: "cut", true: "whole"}[whole]
		b.Run("payloads="+name, func(b *testing.B) {
			dir := DataDir(b.TempDir() + "/data")
			hubNode, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer hubNode.Close()
			node, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer node.Close()
			opts := events.EmitterOptions{Logger: quiet}
			if whole {
				opts.Payloads = node
			}
			em := events.NewEmitter(node, opts)
			defer em.Close(context.Background())
			pad := strings.Repeat("0123456789abcdef", 4<<10) // 64 KiB
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for w := 0; w < 16; w++ {
				wg.Go(func() {
					for n := next.Add(1); n <= int64(b.N); n = next.Add(1) {
						req := em.NewID()
						for i := 0; i < 12; i++ {
							a := map[string]string{"tool": "bench", "args": `{"pattern":"foo.*bar","max":50}`}
							if i == 6 {
								a["answer"] = fmt.Sprint(n) + pad
							}
							em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK, Attrs: events.AttrsOf(a)})
						}
						if err := em.Flush(context.Background(), req); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N*12)/b.Elapsed().Seconds(), "events/s")
			if fi, err := os.Stat(dir.Store()); err == nil {
				b.ReportMetric(float64(fi.Size())/float64(b.N*12), "file-bytes/event")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}
