package hub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// ArchiveEvent records an archive run in the log it shortened; by is who
// ran it (operator, retention).
func ArchiveEvent(seg store.Segment, dir, by string) events.Event {
	return events.Event{Kind: events.KindArchived, Outcome: events.OK, Attrs: events.A("first", fmt.Sprint(seg.First), "last", fmt.Sprint(seg.Last), "file", filepath.Join(dir, seg.File), "sha256", seg.SHA256, "hash", seg.Hash.String(), "by", by)}
}

// Retention is [retention] in force: events older than Keep are archived
// into Dir every Every.
type Retention struct {
	Keep, Every time.Duration
	Dir         string
	Now         func() time.Time
	Emit        func(events.Event) events.ID // records each archive run
	Logger      *slog.Logger
}

// Retain archives, in the hub's own process, the events older than
// r.Keep, at once and then every r.Every, until ctx ends. A failed run is
// logged and leaves the events in the log; the next run tries again.
func (n *Node) Retain(ctx context.Context, r Retention) {
	tick := time.NewTicker(r.Every)
	defer tick.Stop()
	for {
		n.retainOnce(ctx, r)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (n *Node) retainOnce(ctx context.Context, r Retention) {
	upTo, err := n.SeqBefore(ctx, r.Now().Add(-r.Keep))
	if err != nil || upTo == 0 {
		return
	}
	head, _, err := n.Head(ctx)
	if err != nil {
		r.Logger.Error("retention: the log's head cannot be read; nothing archived", "err", err)
		return
	}
	upTo = min(upTo, head-1) // the newest event stays
	seg, err := n.Archive(ctx, r.Dir, upTo, nil)
	switch {
	case errors.Is(err, store.ErrNothingToArchive):
	case err != nil:
		r.Logger.Error("retention: archiving failed; the events stay in the log", "err", err)
	default:
		r.Emit(ArchiveEvent(seg, r.Dir, "retention"))
		r.Logger.Info("retention: archived", "first", seg.First, "last", seg.Last, "file", seg.File)
	}
}

// SeqBefore is the seq of the last event recorded before at (0: none).
func (n *Node) SeqBefore(ctx context.Context, at time.Time) (uint64, error) {
	for next := uint64(1); ; {
		evs, after, err := n.Range(ctx, next, 4096)
		if err != nil || len(evs) == 0 {
			return next - 1, err
		}
		for _, e := range evs {
			if !e.Time.Before(at) {
				return e.Seq - 1, nil
			}
		}
		next = after
	}
}
