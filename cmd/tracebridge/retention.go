package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/store"
)

// archiveEvent records an archive run in the log it shortened.
func archiveEvent(seg store.Segment, dir, by string) events.Event {
	return events.Event{Kind: events.KindArchived, Outcome: events.OK, Attrs: events.AttrsOf(map[string]string{
		"first": fmt.Sprint(seg.First), "last": fmt.Sprint(seg.Last), "file": filepath.Join(dir, seg.File),
		"sha256": seg.SHA256, "hash": seg.Hash.String(), "by": by})}
}

// addRetention archives, in a hub process (serve, up), the events older
// than [retention] keep, every [retention] every (1h), into [retention]
// dir (archive/ in the data dir).
func (m *Main) addRetention(ctx context.Context, g *group, dir hub.DataDir, node *hub.Node, em *events.Emitter, log *slog.Logger) {
	c, err := m.loadConfig("")
	if err != nil || c.Retention.KeepFor() == 0 {
		return
	}
	keep, every, out := c.Retention.KeepFor(), c.Retention.Interval(), c.Retention.Dir
	if out == "" {
		out = dir.Archive()
	}
	log.Info("retention: events older than this are archived", "keep", keep, "archive", out, "every", every)
	g.addContext(ctx, "retention", func(ctx context.Context) error {
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			m.retainOnce(ctx, node, em, m.Now().Add(-keep), out, log)
			select {
			case <-ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	})
}

// retainOnce archives the events before cutoff, if there are any.
func (m *Main) retainOnce(ctx context.Context, node *hub.Node, em *events.Emitter, cutoff time.Time, out string, log *slog.Logger) {
	upTo, err := seqAt(ctx, node, m.Now(), cutoff.UTC().Format(time.RFC3339Nano))
	if err != nil || upTo == 0 {
		return
	}
	if head, _, err := node.Head(ctx); err != nil || upTo >= head {
		upTo = head - 1 // the newest event stays
	}
	seg, err := node.Archive(ctx, out, upTo, nil)
	switch {
	case err != nil && strings.Contains(err.Error(), "nothing to archive"):
	case err != nil:
		log.Error("retention: archiving failed; the events stay in the log", "err", err)
	default:
		em.Emit(archiveEvent(seg, out, "retention"))
		log.Info("retention: archived", "first", seg.First, "last", seg.Last, "file", seg.File)
	}
}
