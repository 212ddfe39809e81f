package hub

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A retention run archives the events older than Keep (the newest always
// stays), records the run, and a run with nothing older is quiet.
func TestRetentionArchivesWhatIsOlder(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	clock := t0
	node, err := Open(ctx, Options{Dir: DataDir(filepath.Join(data, "d")), Role: Elect, Name: "retention-test", Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	defer node.Close()
	em := events.NewEmitter(node, events.EmitterOptions{Now: func() time.Time { return clock }})
	day := map[int]uint64{} // the seq of each day's event
	for i := range 10 {
		clock = t0.Add(time.Duration(i) * 24 * time.Hour)
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: events.NewID(), Outcome: events.OK})
		if err := em.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
		day[i], _, _ = node.Head(ctx)
	}
	if seq, err := node.SeqBefore(ctx, t0.Add(72*time.Hour)); err != nil || seq != day[2] {
		t.Fatalf("SeqBefore day 3: %d %v, want %d (day 2's)", seq, err, day[2])
	}
	var logged bytes.Buffer
	r := Retention{Keep: 5 * 24 * time.Hour, Every: time.Hour, Dir: filepath.Join(data, "archive"),
		Now: func() time.Time { return t0.Add(9 * 24 * time.Hour) }, Emit: em.Emit, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	node.retainOnce(ctx, r)
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	evs, _, err := node.Range(ctx, 1, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) == 0 || evs[0].Seq != day[3]+1 {
		t.Fatalf("after retention the log starts at seq %d, want %d (days 0-3 archived)", evs[0].Seq, day[3]+1)
	}
	if last := evs[len(evs)-1]; last.Kind != events.KindArchived || last.Attrs.Get("last") != fmt.Sprint(day[3]) || last.Attrs.Get("by") != "retention" {
		t.Fatalf("the run is not recorded: %+v", last)
	}
	logged.Reset()
	node.retainOnce(ctx, r)
	if bytes.Contains(logged.Bytes(), []byte("failed")) {
		t.Fatalf("a run with nothing to archive logged a failure:\n%s", logged.String())
	}
}
