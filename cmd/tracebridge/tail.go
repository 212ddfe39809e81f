package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections/hub"
)

func runTail(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("tail")
	request := fs.String("request", "", "only events of request `ID`")
	asJSON := fs.Bool("json", false, "print one JSON event per line")
	n := fs.Int("n", 10, "start with the last `N` stored events (0: only new ones)")
	from := fs.Uint64("from", 0, "start at `SEQ` instead (1: everything)")
	if err := m.parse(fs, "tail [--request ID] [--json] [-n N | --from SEQ]\n\nPrints stored events, then each new one as the hub commits it, until\ninterrupted. Follows the log across hub restarts; with no hub running it\nwaits for one.", args); err != nil {
		return err
	}
	var req events.ID
	if *request != "" {
		var err error
		if req, err = events.ParseID(*request); err != nil {
			return usageError{err.Error()}
		}
	}
	// Wait for a hub (or a log) to exist: tail may start before anything
	// else on this data dir.
	var node *hub.Node
	for waited := false; ; waited = true {
		var err error
		node, err = m.open(ctx, hub.Read, "tail")
		if err == nil {
			break
		}
		if !errors.Is(err, hub.ErrHubUnavailable) || ctx.Err() != nil {
			return err
		}
		if !waited {
			fmt.Fprintln(m.Stderr, "tracebridge tail: no event log or hub yet; waiting for one")
		}
	}
	defer node.Close()
	start := *from
	if start == 0 {
		head, _, err := node.Head(ctx)
		if err != nil {
			return err
		}
		start = head + 1
		if uint64(*n) < head {
			start = head + 1 - uint64(*n)
		} else if *n > 0 {
			start = 1
		}
	}
	if !node.Online() {
		fmt.Fprintln(m.Stderr, "tracebridge tail: no hub is running; showing stored events and waiting for one")
	}
	w := bufio.NewWriter(m.Stdout)
	enc := json.NewEncoder(w)
	err := node.Follow(ctx, start, func(e events.Event) error {
		if !req.IsZero() && e.RequestID != req {
			return nil
		}
		if *asJSON {
			if err := enc.Encode(e); err != nil {
				return err
			}
		} else {
			writeEventLine(w, &e)
		}
		return w.Flush()
	})
	w.Flush()
	return err
}
