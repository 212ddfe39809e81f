package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// BenchmarkCommitsPerCall: one call after another, as the bridge makes
// them — six events, the call's work (300 µs), six more, a Flush — against
// an appender that counts batches. commits/call is the log commits each
// call costs (one is the floor: the Flush).
func BenchmarkCommitsPerCall(b *testing.B) {
	app := &batchCounter{}
	em := events.NewEmitter(app, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	ctx := context.Background()
	calls := 0
	for b.Loop() {
		req := em.NewID()
		for range 6 {
			em.Emit(events.Event{Kind: events.KindToolStarted, RequestID: req, Outcome: events.OK})
		}
		time.Sleep(300 * time.Microsecond)
		for range 6 {
			em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK})
		}
		if err := em.Flush(ctx, req); err != nil {
			b.Fatal(err)
		}
		calls++
	}
	app.mu.Lock()
	defer app.mu.Unlock()
	b.ReportMetric(float64(len(app.batches))/float64(calls), "commits/call")
}
