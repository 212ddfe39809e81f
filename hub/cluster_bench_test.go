package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub/clustertest"
)

// BenchmarkCluster is durable ingest from bridges into the log, the
// embedded single-node hub beside a JetStream cluster of 1 and 3 real
// nats-server processes (sync_interval: always): 64 concurrent requests in
// all, each 12 events and a flush, spread over 1 or 4 bridges. On the
// embedded hub the bridges share one data dir (attached over its bus); on a
// cluster each has its own data dir, whose hub publishes and collects.
// Then the rate at which a fresh collector materializes the stream. b.N
// counts requests.
func BenchmarkCluster(b *testing.B) {
	var clusters = map[int]*clustertest.Cluster{}
	for _, nodes := range []int{0, 1, 3} {
		if nodes > 0 {
			clusters[nodes] = clustertest.Start(b, clustertest.Options{Nodes: nodes})
		}
		for _, bridges := range []int{1, 4} {
			name := fmt.Sprintf("log=embedded/bridges=%d", bridges)
			if nodes > 0 {
				name = fmt.Sprintf("log=cluster-%d/bridges=%d", nodes, bridges)
			}
			b.Run(name, func(b *testing.B) {
				c := clusters[nodes]
				if c != nil {
					resetStream(b, c.URL())
				}
				ems := make([]*events.Emitter, bridges)
				shared := DataDir(b.TempDir() + "/data")
				for i := range ems {
					opts := Options{Dir: shared, Logger: quiet}
					if c != nil {
						opts.Dir = DataDir(b.TempDir() + "/data")
						opts.Cluster = &Cluster{URL: c.URL(), User: "bench", Machine: fmt.Sprint("m", i)}
					}
					n, err := Open(context.Background(), opts)
					if err != nil {
						b.Fatal(err)
					}
					defer n.Close()
					ems[i] = events.NewEmitter(n, events.EmitterOptions{Logger: quiet})
					defer ems[i].Close(context.Background())
				}
				ingest(b, ems, 64, 12)
			})
		}
		if c := clusters[nodes]; c != nil {
			b.Run(fmt.Sprintf("log=cluster-%d/collect", nodes), func(b *testing.B) {
				// The stream holds the last ingest run's events; a fresh
				// collector reads them all.
				last := streamLast(b, c.URL())
				b.ResetTimer()
				for range b.N {
					// A store per iteration, removed right after: b.N
					// collectors of the whole stream would fill the disk.
					dir, err := os.MkdirTemp("", "tb-collect-")
					if err != nil {
						b.Fatal(err)
					}
					n, err := Open(context.Background(), Options{Dir: DataDir(dir + "/data"), Logger: quiet,
						Cluster: &Cluster{URL: c.URL(), User: "collector", Machine: "c"}})
					if err != nil {
						os.RemoveAll(dir)
						b.Fatal(err)
					}
					st := n.cur.(*local).st
					for {
						if src, _ := st.Source(); src.Seq >= last {
							break
						}
						time.Sleep(time.Millisecond)
					}
					n.Close()
					os.RemoveAll(dir)
				}
				b.ReportMetric(float64(last)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// ingest runs b.N requests of per events, workers at a time spread over ems.
func ingest(b *testing.B, ems []*events.Emitter, workers, per int) {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	b.ResetTimer()
	var wg sync.WaitGroup
	for w := range workers {
		em := ems[w%len(ems)]
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(b.N) {
				req := em.NewID()
				for range per {
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
}

// resetStream deletes the stream, so a run starts on an empty one.
func resetStream(b *testing.B, url string) {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// A cluster that just started answers JetStream requests only once it
	// has a meta leader: retry until then.
	var err2 error
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err2 = js.DeleteStream(ctx, DefaultStream)
		cancel()
		if err2 == nil || errors.Is(err2, jetstream.ErrStreamNotFound) {
			return
		}
	}
	b.Fatal(err2)
}

func streamLast(b *testing.B, url string) uint64 {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}
