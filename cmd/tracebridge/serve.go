package main

import (
	"context"
	"fmt"

	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/web"
)

func runServe(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("serve")
	ui := uiFlag(fs)
	cfgPath := fs.String("config", "", "tracebridge.toml `FILE` whose [otlp] and [retention] this process runs while it holds the hub (default $TRACEBRIDGE_CONFIG, else the user config dir's)")
	if err := m.parse(fs, "serve [--ui ADDR|off] [--config FILE] [--data DIR]\n\nRuns the hub of a data dir (embedded NATS on 127.0.0.1, the bbolt log) and the\noperator UI (http://"+web.DefaultAddr+"; the URL with its launch token is printed\nto stderr, and `tracebridge ui` prints it again) until interrupted. Bridges\nand hosts on the same data dir attach to it. Without a running serve, the\nfirst bridge or host to start becomes the hub. The process holding the hub\nexports to [otlp] and archives per [retention] of its own --config.", args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	log := m.logger()
	node, em, closeEvidence, err := m.evidence(ctx, dir, "serve", log)
	if err != nil {
		return err
	}
	defer closeEvidence()
	info, _ := node.Hub()
	if !node.IsHub() {
		return fmt.Errorf("a hub already runs for this data dir (pid %d, %s); serve starts one only when none runs", info.PID, info.URL)
	}
	// The UI talks to the host the working directory (or the only one) names.
	hostPath, err := m.hostRouter(dir, pipe.ClientOptions{}, nil).Path()
	if err != nil {
		hostPath = m.pipePath(dir)
	}
	_, serveUI, err := m.uiPart(*ui, node, em, dir, hostPath, log)
	if err != nil {
		return err
	}
	// Everything serve runs; the hub itself stops with closeEvidence, after
	// the group.
	var g group
	g.addContext(ctx, "signals", untilInterrupted)
	if serveUI != nil {
		g.addContext(ctx, "ui", serveUI)
	}
	m.addHubDuties(ctx, &g, m.dutyConfig(*cfgPath, log), dir, node, em, log)
	fmt.Fprintf(m.Stderr, "tracebridge hub: data %s, bus %s, pid %d. Ctrl-C stops it.\n", dir, info.URL, info.PID)
	err = g.run()
	fmt.Fprintln(m.Stderr, "tracebridge hub: stopping")
	return err
}
