package main

import (
	"log/slog"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// retention is c's [retention]: archive the events older than keep, every
// [retention] every (1h), into [retention] dir (archive/ in the data dir);
// false when c keeps everything. The process holding the hub runs it
// (addHubDuties).
func (m *Main) retention(c *config.Config, dir hub.DataDir, em *events.Emitter, log *slog.Logger) (hub.Retention, bool) {
	if c.Retention.KeepFor() == 0 {
		return hub.Retention{}, false
	}
	r := hub.Retention{Keep: c.Retention.KeepFor(), Every: c.Retention.Interval(), Dir: c.Retention.Dir, Now: m.Now, Emit: em.Emit, Logger: log}
	if r.Dir == "" {
		r.Dir = dir.Archive()
	}
	log.Info("retention: events older than this are archived", "keep", r.Keep, "archive", r.Dir, "every", r.Every)
	return r, true
}
