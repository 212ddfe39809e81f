package hub

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
)

// Follow calls fn with every event from seq from onward, in seq order, and
// then with each new one as it is committed, until ctx ends or fn returns an
// error. It catches up from the store, then follows the live subject; a gap
// in the live stream (a dropped message) is filled from the store, and when
// the hub goes away it attaches to the next one and resumes after the last
// seq it delivered. A Read node waits for a hub to appear.
func (n *Node) Follow(ctx context.Context, from uint64, fn func(events.Event) error) error {
	next := max(from, 1)
	for ctx.Err() == nil {
		err := n.followOnce(ctx, &next, fn)
		var stop stopError
		if errors.As(err, &stop) {
			return stop.err
		}
		if ctx.Err() != nil {
			break
		}
		n.opts.Logger.Debug("follow: hub lost; resuming", "next", next, "err", err)
		select {
		case <-ctx.Done():
		case <-time.After(200 * time.Millisecond):
		}
	}
	return nil
}

// stopError carries fn's error out of followOnce: it ends Follow.
type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }

func (n *Node) followOnce(ctx context.Context, next *uint64, fn func(events.Event) error) error {
	b, err := n.link(ctx)
	if err != nil {
		return err
	}
	nc := b.conn()
	if nc == nil {
		// Read-only: deliver what is stored, then drop the link so the next
		// round looks for a hub.
		if err := n.catchUp(ctx, b, next, fn); err != nil {
			return err
		}
		n.mu.Lock()
		if n.cur == b {
			b.close()
			n.cur = nil
		}
		n.mu.Unlock()
		return ErrNoHub
	}
	live := make(chan *nats.Msg, 8192)
	sub, err := nc.ChanSubscribe(SubjEvents+".>", live)
	if err != nil {
		return err
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		return err
	}
	if err := n.catchUp(ctx, b, next, fn); err != nil {
		return err
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if b.dead() || !sub.IsValid() {
				return ErrHubUnavailable
			}
		case m := <-live:
			e, err := events.Decode(m.Data)
			if err != nil {
				continue // not ours to judge; the store copy is authoritative
			}
			if e.Seq < *next {
				continue
			}
			if e.Seq > *next {
				if err := n.catchUp(ctx, b, next, fn); err != nil {
					return err
				}
				if e.Seq < *next {
					continue
				}
			}
			if err := fn(e); err != nil {
				return stopError{err}
			}
			*next = e.Seq + 1
		}
	}
}

// catchUp delivers stored events from *next to the current head.
func (n *Node) catchUp(ctx context.Context, b backend, next *uint64, fn func(events.Event) error) error {
	for {
		recs, _, err := b.rangeRecords(ctx, *next, 2048)
		if err != nil {
			return err
		}
		for _, r := range recs {
			e, err := events.Decode(r)
			if err != nil {
				return err
			}
			if err := fn(e); err != nil {
				return stopError{err}
			}
			*next = e.Seq + 1
		}
		if len(recs) == 0 {
			return nil
		}
	}
}

// Notify signals on the returned channel whenever an event of request req
// and kind is committed (a signal may stand for several), until stop is
// called. It needs a live hub: a read-only node returns ErrNoHub. A caller
// still reads the log for what the signal stands for; the signal only says
// when to look.
func (n *Node) Notify(ctx context.Context, req events.ID, kind string) (<-chan struct{}, func(), error) {
	b, err := n.link(ctx)
	if err != nil {
		return nil, nil, err
	}
	nc := b.conn()
	if nc == nil {
		return nil, nil, ErrNoHub
	}
	ch := make(chan struct{}, 1)
	sub, err := nc.Subscribe(SubjEvents+"."+req.String()+"."+kind, func(*nats.Msg) {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return nil, nil, err
	}
	if err := nc.Flush(); err != nil { // subscribed before the caller's first look
		sub.Unsubscribe()
		return nil, nil, err
	}
	return ch, func() { sub.Unsubscribe() }, nil
}
