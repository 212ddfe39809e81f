package main

import (
	"context"
	"log/slog"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// addRetention archives, in a hub process (serve, up), the events older
// than [retention] keep, every [retention] every (1h), into [retention]
// dir (archive/ in the data dir).
func (m *Main) addRetention(ctx context.Context, g *group, dir hub.DataDir, node *hub.Node, em *events.Emitter, log *slog.Logger) {
	c, err := m.loadConfig("")
	if err != nil || c.Retention.KeepFor() == 0 {
		return
	}
	r := hub.Retention{Keep: c.Retention.KeepFor(), Every: c.Retention.Interval(), Dir: c.Retention.Dir, Now: m.Now, Emit: em.Emit, Logger: log}
	if r.Dir == "" {
		r.Dir = dir.Archive()
	}
	log.Info("retention: events older than this are archived", "keep", r.Keep, "archive", r.Dir, "every", r.Every)
	g.addContext(ctx, "retention", func(ctx context.Context) error { node.Retain(ctx, r); return nil })
}
