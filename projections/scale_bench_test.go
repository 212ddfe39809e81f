package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// scaleSizes are the store sizes of BenchmarkScale: 10k to 1M, and what
// TB_SCALE_SIZES lists instead (10000000 for the 10M point: minutes).
func scaleSizes() []int {
	sizes := []int{10_000, 100_000, 1_000_000}
	if v := os.Getenv("TB_SCALE_SIZES"); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			if n, err := strconv.Atoi(f); err == nil && n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	return sizes
}

// BenchmarkScale is the scaling curve: at each store size, durable ingest
// into it (64 concurrent requests of 12 events, as BenchmarkIngest's hub
// path), one request's 50 events, a full verify, a rebuild of every
// projection, and the bytes of the bbolt file in use per event.
func BenchmarkScale(b *testing.B) {
	for _, n := range scaleSizes() {
		fx, err := storetest.Build(n)
		if err != nil {
			b.Fatal(err)
		}
		st := fx.Store
		b.Run(fmt.Sprintf("events=%d/ingest", n), func(b *testing.B) {
			ids := events.NewIDSource(nil, nil)
			var mu sync.Mutex
			var lat []time.Duration
			var wg sync.WaitGroup
			reqs := 0
			for b.Loop() {
				reqs += 64
				for w := 0; w < 64; w++ {
					wg.Go(func() {
						req, sess := ids.New(), ids.New()
						evs := make([]events.Event, 12)
						for i := range evs {
							info, _ := events.Lookup(events.KindToolCompleted)
							evs[i] = events.Event{ID: ids.New(), Time: time.Now(), Kind: events.KindToolCompleted, Boundary: info.Boundary,
								From: info.From, To: info.To, RequestID: req, SessionID: sess, Outcome: events.OK,
								Attrs: events.A("tool", "bench", "args", `{"pattern":"foo.*bar","max":50}`)}
						}
						t0 := time.Now()
						if _, err := st.Append(context.Background(), evs); err != nil {
							b.Error(err)
						}
						mu.Lock()
						lat = append(lat, time.Since(t0))
						mu.Unlock()
					})
				}
				wg.Wait()
			}
			b.ReportMetric(float64(reqs*12)/b.Elapsed().Seconds(), "events/s")
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "ack-p50-µs")
			b.ReportMetric(0, "ns/op")
		})
		b.Run(fmt.Sprintf("events=%d/lookup", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				evs, err := st.ByRequest(fx.Requests[rng.IntN(len(fx.Requests))])
				lat = append(lat, time.Since(t0))
				if err != nil || len(evs) != 50 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2])/1e3, "read-p50-µs")
			b.ReportMetric(0, "ns/op")
		})
		b.Run(fmt.Sprintf("events=%d/verify", n), func(b *testing.B) {
			for b.Loop() {
				rep, err := st.Verify()
				if err != nil || !rep.OK() {
					b.Fatal(rep, err)
				}
			}
			head, _ := st.Head()
			b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("events=%d/rebuild", n), func(b *testing.B) {
			p := New(st)
			for b.Loop() {
				if _, err := p.Rebuild(context.Background(), nil, nil); err != nil {
					b.Fatal(err)
				}
			}
			head, _ := st.Head()
			b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
		b.Run(fmt.Sprintf("events=%d/file", n), func(b *testing.B) {
			for b.Loop() {
			}
			size, err := st.Size()
			if err != nil {
				b.Fatal(err)
			}
			head, _ := st.Head()
			b.ReportMetric(float64(size)/float64(head), "file-bytes/event")
			b.ReportMetric(0, "ns/op")
		})
	}
}
