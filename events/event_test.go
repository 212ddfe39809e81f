package events

import (
	"testing"
	"time"
)

// A step's duration is recorded in milliseconds with microsecond
// precision; a point event has none.
func TestTookRecordsTheStepsDuration(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 1, 0, 0, 0, time.UTC)
	e := Event{Kind: KindToolCompleted}.Took(t0, t0.Add(1500*time.Microsecond+999*time.Nanosecond))
	if e.DurationMs != 1.5 {
		t.Fatalf("DurationMs %v, want 1.5", e.DurationMs)
	}
	if p := (Event{Kind: KindToolStarted}).Took(time.Time{}, t0); p.DurationMs != 0 {
		t.Fatalf("a point event got a duration: %v", p.DurationMs)
	}
}
