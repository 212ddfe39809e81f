package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

func runTail(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("tail")
	request := fs.String("request", "", "only events of request `ID`")
	asJSON := fs.Bool("json", false, "print one JSON event per line")
	n := fs.Int("n", 10, "the last `N` stored events (with --from: at most N from there)")
	from := fs.Uint64("from", 0, "start at `SEQ` instead (1: everything)")
	since := fs.String("since", "", "only events at or after `WHEN`: a duration back from now (10m, 2h) or an RFC 3339 time")
	follow := fs.Bool("f", false, "follow: after the stored events, print each new one as the hub commits it, until interrupted")
	fs.BoolVar(follow, "follow", false, "the same as -f")
	if err := m.parse(fs, "tail [--request ID] [--json] [-n N] [--from SEQ] [--since WHEN] [-f]\n\nPrints stored events and exits; with -f it then prints each new one as the hub\ncommits it, until interrupted, following the log across hub restarts (with no\nhub running it waits for one).", args); err != nil {
		return err
	}
	nSet := false
	fs.Visit(func(f *flag.Flag) { nSet = nSet || f.Name == "n" })
	if *n < 0 {
		return usageError{"-n must be 0 or more"}
	}
	var req events.ID
	if *request != "" {
		var err error
		if req, err = m.requestID(ctx, *request); err != nil {
			return usageError{"--request: " + err.Error()}
		}
	}
	var cutoff time.Time
	if *since != "" {
		if d, err := config.ParseDuration(*since); err == nil {
			cutoff = m.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, *since); err == nil {
			cutoff = t
		} else {
			return usageError{fmt.Sprintf("--since %q: want a duration (10m, 2h, 7d) or an RFC 3339 time (2026-11-23T10:00:00Z)", *since)}
		}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(string(dir)); err != nil && !*follow {
		return fmt.Errorf("no data dir at %s (check --data or $TRACEBRIDGE_DATA): %w", dir, err)
	}
	var node *hub.Node
	if *follow {
		// tail -f may start before anything else: wait for the data dir
		// (never creating it: a mistyped --data must not become one).
		for said := false; ; said = true {
			if _, err := os.Stat(string(dir)); err == nil {
				break
			}
			if !said {
				fmt.Fprintf(m.Stderr, "tracebridge tail: no data dir at %s yet (check --data); waiting for one\n", dir)
			}
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(200 * time.Millisecond):
			}
		}
		// Wait for a hub (or a log) to exist: tail -f may start before
		// anything else on this data dir.
		for waited := false; ; waited = true {
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
	} else if node, err = m.openLog(ctx, "tail"); err != nil {
		return err
	}
	defer node.Close()
	head, _, err := node.Head(ctx)
	if err != nil {
		return err
	}
	start := *from
	switch {
	case start > 0:
	case !cutoff.IsZero() || !req.IsZero() && !nSet:
		start = 1 // a time or a request: search the whole log
	default:
		start = 1
		if uint64(*n) < head {
			start = head + 1 - uint64(*n)
		}
		if *n == 0 {
			start = head + 1
		}
	}
	w := bufio.NewWriter(m.Stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	printed := 0
	print := func(e events.Event) error {
		if !req.IsZero() && e.RequestID != req || !cutoff.IsZero() && e.Time.Before(cutoff) {
			return nil
		}
		printed++
		if *asJSON {
			if err := enc.Encode(e); err != nil {
				return err
			}
		} else {
			writeEventLine(w, &e)
		}
		return w.Flush()
	}
	if !*follow {
		limit := -1
		if *from > 0 && nSet {
			limit = *n
		}
		if !req.IsZero() && start == 1 {
			evs, err := node.ByRequest(ctx, req)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				return fmt.Errorf("no events for request %s in %s (see `tracebridge runs`)", req, dir)
			}
			for _, e := range evs {
				if err := print(e); err != nil {
					return err
				}
			}
			return nil
		}
		for next := start; next <= head && limit != 0; {
			evs, after, err := node.Range(ctx, next, 2048)
			if err != nil {
				return err
			}
			if len(evs) == 0 {
				break
			}
			for _, e := range evs {
				if e.Seq > head || limit == 0 {
					break
				}
				before := printed
				if err := print(e); err != nil {
					return err
				}
				if limit > 0 && printed > before {
					limit--
				}
			}
			next = after
		}
		return nil
	}
	if !node.Online() {
		fmt.Fprintln(m.Stderr, "tracebridge tail: no hub is running; showing stored events and waiting for one")
	}
	return node.Follow(ctx, start, print)
}
