package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

func TestAppendFromRecordsTheStreamPositionWithTheEvents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := testIDs.New()
	a, b := ev(req, 1), ev(req, 2)
	if _, err := s.AppendFrom(ctx, []events.Event{a}, Source{"TB", 1}); err != nil {
		t.Fatal(err)
	}
	// A message the collector refused still moves the position; a
	// duplicate (re-published past the stream's dedup window) is not
	// stored again but moves it too.
	if _, err := s.AppendFrom(ctx, nil, Source{"TB", 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AppendFrom(ctx, []events.Event{a, b}, Source{"TB", 4}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Source{{"TB", 4}, {"TB", 3}, {"OTHER", 9}} {
		_, err := s.AppendFrom(ctx, []events.Event{ev(req, 3)}, bad)
		var rej *events.Err
		if !errors.As(err, &rej) || rej.Code != events.CodeInvalidEvent {
			t.Fatalf("AppendFrom at %+v after TB/4: %v, want InvalidEvent", bad, err)
		}
	}
	if s.Refusal() != nil {
		t.Fatalf("a wrong position stopped the store: %v", s.Refusal())
	}
	if _, err := s.Append(ctx, []events.Event{ev(req, 5)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(path, Options{}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if src, err := s.Source(); err != nil || src != (Source{"TB", 4}) {
		t.Fatalf("Source after reopen = %+v, %v; want TB/4", src, err)
	}
	if head, _ := s.Head(); head != 3 {
		t.Fatalf("head = %d, want 3 (a, b, and the plain append)", head)
	}
}
