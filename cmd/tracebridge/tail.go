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

// tailQuery is what `tail` prints.
type tailQuery struct {
	req    events.ID
	cutoff time.Time
	n      int
	nSet   bool
	from   uint64
	follow bool
	json   bool
}

func runTail(ctx context.Context, m *Main, args []string) error {
	q, err := parseTail(ctx, m, args)
	if err != nil {
		return err
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(string(dir)); err != nil && !q.follow {
		return fmt.Errorf("no data dir at %s (check --data or $TRACEBRIDGE_DATA): %w", dir, err)
	}
	var node *hub.Node
	if q.follow {
		node, err = waitForLog(ctx, m, dir)
	} else {
		node, err = m.openLog(ctx, "tail")
	}
	if err != nil || node == nil {
		return err
	}
	defer node.Close()
	head, _, err := node.Head(ctx)
	if err != nil {
		return err
	}
	p := &tailPrinter{q: q, w: bufio.NewWriter(m.Stdout)}
	p.enc = json.NewEncoder(p.w)
	defer p.w.Flush()
	start := q.start(head)
	if !q.follow {
		if !q.req.IsZero() && start == 1 {
			return p.request(ctx, node, dir)
		}
		return p.stored(ctx, node, start, head)
	}
	if !node.Online() {
		fmt.Fprintln(m.Stderr, "tracebridge tail: no hub is running; showing stored events and waiting for one")
	}
	return node.Follow(ctx, start, p.print)
}

func parseTail(ctx context.Context, m *Main, args []string) (tailQuery, error) {
	var q tailQuery
	fs := m.flags("tail")
	request := fs.String("request", "", "only events of request `ID`")
	fs.BoolVar(&q.json, "json", false, "print one JSON event per line")
	fs.IntVar(&q.n, "n", 10, "the last `N` stored events (with --from: at most N from there)")
	fs.Uint64Var(&q.from, "from", 0, "start at `SEQ` instead (1: everything)")
	since := fs.String("since", "", "only events at or after `WHEN`: a duration back from now (10m, 2h) or an RFC 3339 time")
	fs.BoolVar(&q.follow, "f", false, "follow: after the stored events, print each new one as the hub commits it, until interrupted")
	fs.BoolVar(&q.follow, "follow", false, "the same as -f")
	if err := m.parse(fs, "tail [--request ID] [--json] [-n N] [--from SEQ] [--since WHEN] [-f|--follow]\n\nPrints stored events and exits; with -f it then prints each new one as the hub\ncommits it, until interrupted, following the log across hub restarts (with no\nhub running it waits for one).", args); err != nil {
		return q, err
	}
	fs.Visit(func(f *flag.Flag) { q.nSet = q.nSet || f.Name == "n" })
	if q.n < 0 {
		return q, usageError{"-n must be 0 or more"}
	}
	if *request != "" {
		var err error
		if q.req, err = m.requestID(ctx, *request); err != nil {
			return q, usageError{"--request: " + err.Error()}
		}
	}
	if *since != "" {
		if d, err := config.ParseDuration(*since); err == nil {
			q.cutoff = m.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, *since); err == nil {
			q.cutoff = t
		} else {
			return q, usageError{fmt.Sprintf("--since %q: want a duration (10m, 2h, 7d) or an RFC 3339 time (2026-11-23T10:00:00Z)", *since)}
		}
	}
	return q, nil
}

// waitForLog opens the log for tail -f, which may start before anything
// else: it waits for the data dir (never creating it: a mistyped --data
// must not become one), then for a hub or a log. A nil node: interrupted.
func waitForLog(ctx context.Context, m *Main, dir hub.DataDir) (*hub.Node, error) {
	for said := false; ; said = true {
		if _, err := os.Stat(string(dir)); err == nil {
			break
		}
		if !said {
			fmt.Fprintf(m.Stderr, "tracebridge tail: no data dir at %s yet (check --data); waiting for one\n", dir)
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-time.After(200 * time.Millisecond):
		}
	}
	for waited := false; ; waited = true {
		node, err := m.open(ctx, hub.Read, "tail")
		if err == nil {
			return node, nil
		}
		if !errors.Is(err, hub.ErrHubUnavailable) || ctx.Err() != nil {
			return nil, err
		}
		if !waited {
			fmt.Fprintln(m.Stderr, "tracebridge tail: no event log or hub yet; waiting for one")
		}
	}
}

// start is the first seq to read: --from, the whole log for a time or a
// request, else the last n before head.
func (q tailQuery) start(head uint64) uint64 {
	switch {
	case q.from > 0:
		return q.from
	case !q.cutoff.IsZero() || !q.req.IsZero() && !q.nSet:
		return 1
	case q.n == 0:
		return head + 1
	case uint64(q.n) < head:
		return head + 1 - uint64(q.n)
	}
	return 1
}

// tailPrinter prints the events a tailQuery selects.
type tailPrinter struct {
	q       tailQuery
	w       *bufio.Writer
	enc     *json.Encoder
	printed int
}

func (p *tailPrinter) print(e events.Event) error {
	if !p.q.req.IsZero() && e.RequestID != p.q.req || !p.q.cutoff.IsZero() && e.Time.Before(p.q.cutoff) {
		return nil
	}
	p.printed++
	if p.q.json {
		if err := p.enc.Encode(e); err != nil {
			return err
		}
	} else {
		writeEventLine(p.w, &e)
	}
	return p.w.Flush()
}

// request prints one request's events, by its index.
func (p *tailPrinter) request(ctx context.Context, node *hub.Node, dir hub.DataDir) error {
	evs, err := node.ByRequest(ctx, p.q.req)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("no events for request %s in %s (see `tracebridge runs`)", p.q.req, dir)
	}
	for _, e := range evs {
		if err := p.print(e); err != nil {
			return err
		}
	}
	return nil
}

// stored prints the events from start up to head (at most n of them with
// --from and -n).
func (p *tailPrinter) stored(ctx context.Context, node *hub.Node, start, head uint64) error {
	limit := -1
	if p.q.from > 0 && p.q.nSet {
		limit = p.q.n
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
			before := p.printed
			if err := p.print(e); err != nil {
				return err
			}
			if limit > 0 && p.printed > before {
				limit--
			}
		}
		next = after
	}
	return nil
}
