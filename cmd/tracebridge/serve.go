package main

import (
	"context"
	"fmt"

	"github.com/tracebridge/tracebridge/events/hub"
)

func runServe(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("serve")
	if err := m.parse(fs, "serve [--data DIR]\n\nRuns the hub of a data dir (embedded NATS on 127.0.0.1, the bbolt log) until\ninterrupted. Bridges and hosts on the same data dir attach to it. Without a\nrunning serve, the first bridge or host to start becomes the hub.", args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	node, err := m.open(ctx, hub.Elect, "serve")
	if err != nil {
		return err
	}
	info, _ := node.Hub()
	if !node.IsHub() {
		node.Close()
		return fmt.Errorf("a hub already runs for this data dir (pid %d, %s); serve starts one only when none runs", info.PID, info.URL)
	}
	dir, _ := m.dataDir()
	fmt.Fprintf(m.Stderr, "tracebridge hub: data %s, bus %s, pid %d. Ctrl-C stops it.\n", dir, info.URL, info.PID)
	<-ctx.Done()
	fmt.Fprintln(m.Stderr, "tracebridge hub: stopping")
	return node.Close()
}
