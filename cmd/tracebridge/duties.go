package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// dutyConfig is the configuration whose duties a hub-capable process runs:
// cfgPath's (default $TRACEBRIDGE_CONFIG, else the user config dir's); a
// broken one runs none, and says so.
func (m *Main) dutyConfig(cfgPath string, log *slog.Logger) *config.Config {
	c, err := m.loadConfig(cfgPath)
	if err != nil {
		log.Warn("the configuration is broken: this process exports nothing and archives nothing while it holds the hub", "err", err)
		return nil
	}
	return c
}

// dutyPoll is how often a process checks whether it holds the hub.
const dutyPoll = time.Second

// dutyGrace is how long a process with [otlp] waits to hold the hub
// before it says that it exports nothing (an election takes a moment).
const dutyGrace = 3 * time.Second

// addHubDuties runs what only the process holding the data dir's hub
// does — the OTLP exporter of c's [otlp] and the retention of c's
// [retention] — for as long as this process holds it: mcp, serve, up and
// host all may, and the hub moves when its process exits. A process whose
// [otlp] exports nothing (another process holds the hub, or the exporter
// cannot be built) says so once, on stderr and as log.export.idle.
func (m *Main) addHubDuties(ctx context.Context, g *group, c *config.Config, dir hub.DataDir, node *hub.Node, em *events.Emitter, log *slog.Logger) {
	if c == nil || c.OTLP.Endpoint == "" && c.Retention.KeepFor() == 0 {
		return
	}
	g.addContext(ctx, "hub duties", func(ctx context.Context) error {
		d := &duties{m: m, c: c, dir: dir, node: node, em: em, log: log, since: m.Now()}
		defer d.stop()
		t := time.NewTicker(dutyPoll)
		defer t.Stop()
		for {
			d.check(ctx)
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
			}
		}
	})
}

// duties are one process's hub duties and whether they run.
type duties struct {
	m     *Main
	c     *config.Config
	dir   hub.DataDir
	node  *hub.Node
	em    *events.Emitter
	log   *slog.Logger
	since time.Time

	cancel context.CancelFunc
	done   chan struct{}
	told   bool // that [otlp] exports nothing here
}

// check starts the duties when this process holds the hub, stops them
// when it no longer does, and says once why a configured exporter idles.
func (d *duties) check(ctx context.Context) {
	isHub := d.node.IsHub()
	switch {
	case isHub && d.cancel == nil:
		d.start(ctx)
	case !isHub && d.cancel != nil:
		d.stop()
		d.log.Info("this process no longer holds the hub: its exporter and retention stopped (the new hub's process runs its own)")
	case !isHub && d.c.OTLP.Endpoint != "" && d.m.Now().Sub(d.since) >= dutyGrace:
		holder := "another process"
		if info, ok := d.node.Hub(); ok && info.PID > 0 {
			holder = fmt.Sprintf("pid %d", info.PID)
		}
		d.idle(fmt.Sprintf("[otlp] exports nothing from this process: the hub of %s runs in %s, which exports only what its own configuration's [otlp] asks", d.dir, holder))
	}
}

// start runs the exporter and retention until stop.
func (d *duties) start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	d.cancel, d.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	if d.c.OTLP.Endpoint != "" {
		x, shutdown, err := d.m.newExporter(ctx, d.c, d.dir, d.node, d.log)
		if err != nil {
			d.idle(fmt.Sprintf("[otlp] exports nothing: the exporter cannot be built: %v", err))
		} else {
			d.log.Info("exporting runs as OTLP traces (this process holds the hub)", "endpoint", d.c.OTLP.Endpoint, "protocol", orDash(d.c.OTLP.Protocol))
			wg.Go(func() {
				defer shutdown()
				if err := x.Run(ctx); err != nil && ctx.Err() == nil {
					d.log.Error("the OTLP exporter stopped", "err", err)
				}
			})
		}
	}
	if r, ok := d.m.retention(d.c, d.dir, d.em, d.log); ok {
		wg.Go(func() { d.node.Retain(ctx, r) })
	}
	go func() {
		wg.Wait()
		close(d.done)
	}()
}

// stop ends the duties and waits for them.
func (d *duties) stop() {
	if d.cancel == nil {
		return
	}
	d.cancel()
	<-d.done
	d.cancel, d.done = nil, nil
}

// idle says once, on stderr and in the log, that [otlp] exports nothing.
func (d *duties) idle(msg string) {
	if d.told {
		return
	}
	d.told = true
	d.log.Warn(msg, "action", events.ActionFor(events.CodeExportIdle))
	d.em.Emit(events.Event{Kind: events.KindExportIdle, Outcome: events.OutcomeOf(events.CodeExportIdle), Code: events.CodeExportIdle,
		Attrs: events.A(events.AttrError, msg, "endpoint", d.c.OTLP.Endpoint)})
}
