package projections

import (
	"context"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// FollowFunc delivers the log's events from seq from on, stored then live,
// until ctx ends (a hub.Node's Follow).
type FollowFunc func(ctx context.Context, from uint64, fn func(events.Event) error) error

// FollowTicking follows the log from seq from and calls fn with each event
// and tick every period, both on the caller's goroutine (so they can share
// state without locks), until ctx ends (nil) or one of them, or the follow,
// fails. Exporters use it to batch what they follow.
func FollowTicking(ctx context.Context, follow FollowFunc, from uint64, every time.Duration, fn func(events.Event) error, tick func() error) error {
	got := make(chan events.Event, 1024)
	errc := make(chan error, 1)
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		errc <- follow(fctx, from, func(e events.Event) error {
			select {
			case got <- e:
				return nil
			case <-fctx.Done():
				return fctx.Err()
			}
		})
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case e := <-got:
			if err := fn(e); err != nil {
				return err
			}
		case <-t.C:
			if err := tick(); err != nil {
				return err
			}
		case err := <-errc:
			if ctx.Err() != nil {
				return nil
			}
			return err
		case <-ctx.Done():
			return nil
		}
	}
}
