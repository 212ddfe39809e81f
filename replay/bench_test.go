package replay

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// BenchmarkReplay50In1M reconstructs one 50-event run from a 1M-event
// store, judges it and draws its diagram: what `tracebridge replay` does.
func BenchmarkReplay50In1M(b *testing.B) {
	fx, err := storetest.Build(1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	for b.Loop() {
		req := fx.Requests[r.IntN(len(fx.Requests))]
		t0 := time.Now()
		evs, err := fx.Store.ByRequest(req)
		if err != nil || len(evs) != 50 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
		run := Judge(req, evs)
		_ = mermaid.Sequence(run.Events, mermaid.Options{})
		lat = append(lat, time.Since(t0))
		if run.Status != StatusOK {
			b.Fatalf("run %+v", run.Verdict)
		}
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100])/1e3, "p99-µs")
}

// BenchmarkDiagram1000 draws the diagram of a 1,000-event session.
func BenchmarkDiagram1000(b *testing.B) {
	evs := make([]events.Event, 0, 1000)
	for len(evs) < 1000 {
		for _, k := range storetest.Chain {
			info, _ := events.Lookup(k)
			evs = append(evs, events.Event{Kind: k, Boundary: info.Boundary, From: info.From, To: info.To, Outcome: events.OK,
				Attrs: events.A("tool", "get_selection", "reason", "granted")})
		}
	}
	evs = evs[:1000]
	for b.Loop() {
		_ = mermaid.Sequence(evs, mermaid.Options{})
	}
}
