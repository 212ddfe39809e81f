package projections

import (
	"context"
	"testing"

	"github.com/tracebridge/tracebridge/store/storetest"
)

// BenchmarkRebuildAll rebuilds every projection from seq 1 of a store of
// 1M events.
func BenchmarkRebuildAll(b *testing.B) {
	fx, err := storetest.Build(1_000_000)
	if err != nil {
		b.Fatal(err)
	}
	p := New(fx.Store)
	head, _ := fx.Store.Head()
	b.ResetTimer()
	for b.Loop() {
		if _, err := p.Rebuild(context.Background(), nil, nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(head)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
