package main

import (
	"context"
	"errors"
	"fmt"
)

// group runs a process's long-lived parts together, after oklog/run's
// group.go: each part has an execute, which runs until it is done, and an
// interrupt, which makes its execute return. When the first part returns,
// with an error or without, every part is interrupted (in the order they
// were added) and run waits for all of them; run returns the first part's
// error. Reading the function that fills a group tells everything a process
// runs and in which order it stops.
type group struct {
	parts []part
}

type part struct {
	name      string
	execute   func() error
	interrupt func(error)
}

// add adds a part.
func (g *group) add(name string, execute func() error, interrupt func(error)) {
	g.parts = append(g.parts, part{name, execute, interrupt})
}

// addContext adds a part that runs until ctx ends: execute gets a context
// that the interrupt cancels.
func (g *group) addContext(ctx context.Context, name string, execute func(ctx context.Context) error) {
	ctx, cancel := context.WithCancel(ctx)
	g.add(name, func() error { return execute(ctx) }, func(error) { cancel() })
}

// run runs every part and returns the error of the first to return
// (nil when it ended cleanly), wrapped with its name.
func (g *group) run() error {
	if len(g.parts) == 0 {
		return nil
	}
	type result struct {
		name string
		err  error
	}
	done := make(chan result, len(g.parts))
	for _, p := range g.parts {
		go func() { done <- result{p.name, p.execute()} }()
	}
	first := <-done
	for _, p := range g.parts {
		p.interrupt(first.err)
	}
	for range len(g.parts) - 1 {
		<-done
	}
	if first.err != nil && !errors.Is(first.err, context.Canceled) {
		return fmt.Errorf("%s: %w", first.name, first.err)
	}
	return nil
}
