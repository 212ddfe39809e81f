package store

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// openTest opens a fresh store and, when the test ends, checks the
// invariants every store must keep: the chain verifies and seqs are
// contiguous from 1 to the head.
func openTest(t *testing.T) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		rep, err := s.Verify()
		if err != nil {
			t.Errorf("verify: %v", err)
		} else if !rep.OK() {
			t.Errorf("invariant: %s", rep)
		}
		head, _ := s.Head()
		if rep.Events+rep.Anchor != head {
			t.Errorf("invariant: %d events stored after the anchor %d, head is %d", rep.Events, rep.Anchor, head)
		}
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return s
}

var testIDs = events.NewIDSource(nil, nil)

// ev makes a valid event of request req.
func ev(req events.ID, i int) events.Event {
	return events.Event{
		ID: testIDs.New(), Time: time.Unix(1700000000, int64(i)).UTC(),
		Kind: events.KindToolCompleted, Boundary: events.BoundaryTool,
		From: events.Tool, To: events.Executor,
		RequestID: req, SessionID: req, Outcome: events.OK,
		Attrs: events.A("i", fmt.Sprint(i), "marker", fmt.Sprintf("value-%06d", i)),
	}
}
