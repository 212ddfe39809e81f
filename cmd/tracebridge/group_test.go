package main

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
)

// The first part to fail stops the others, in the order they were added,
// and its error (with its name) is what run returns.
func TestGroupStopsEveryPartWhenOneFails(t *testing.T) {
	var g group
	var mu sync.Mutex
	var stopped []string
	boom := errors.New("listener closed")
	for _, name := range []string{"signals", "pipe", "ui"} {
		g.addContext(context.Background(), name, func(ctx context.Context) error {
			if name == "ui" {
				return boom
			}
			<-ctx.Done()
			mu.Lock()
			stopped = append(stopped, name)
			mu.Unlock()
			return ctx.Err()
		})
	}
	err := g.run()
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "ui: ") {
		t.Fatalf("run: %v, want the ui's error", err)
	}
	if len(stopped) != 2 {
		t.Fatalf("stopped %v, want signals and pipe", stopped)
	}
	// A clean end (Ctrl-C) is no error.
	var h group
	ctx, cancel := context.WithCancel(context.Background())
	h.addContext(ctx, "signals", func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() })
	h.addContext(context.Background(), "hub", func(ctx context.Context) error { <-ctx.Done(); return nil })
	cancel()
	if err := h.run(); err != nil {
		t.Fatalf("a clean stop: %v", err)
	}
}
