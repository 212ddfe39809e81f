package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

const exportHelp = `export audit [--format jsonl] [--since SEQ|TIME] [--follow] [-o FILE]
       tracebridge export otlp [--since SEQ|TIME]   (see export otlp --help)

Writes the audit envelopes of the log for a SIEM: one JSON object per line,
in seq order, each with the event's seq, id, time and chain hash, its request
and session, the envelope (tool, descriptor, policy decision, secrets by name,
approval, redacted arguments and result, outcome, code, action,
classification) and the signed checkpoint that covers it (the chain up to the
checkpoint's seq verifies to its hash, so a line can be checked against the
log). Fields: docs/audit-export.schema.json.

--since SEQ starts after that seq (resume where the last export ended); --since
TIME (RFC 3339, or a duration such as 24h) starts at that time. --follow keeps
writing new envelopes as the hub commits them, each batch after a checkpoint
that covers it has been signed (about once a second), until interrupted.`

// auditLine is one line of `export audit`.
type auditLine struct {
	Seq       uint64          `json:"seq"`
	EventID   events.ID       `json:"eventId"`
	Time      time.Time       `json:"time"`
	Hash      string          `json:"hash"`
	RequestID events.ID       `json:"requestId,omitzero"`
	SessionID events.ID       `json:"sessionId,omitzero"`
	Tool      string          `json:"tool,omitempty"`
	Outcome   events.Outcome  `json:"outcome"`
	Code      events.Code     `json:"code,omitempty"`
	Envelope  json.RawMessage `json:"envelope,omitempty"`
	// EnvelopeCut is the envelope's text when it is not JSON: cut by a log
	// older than the payload store (over 4 KiB), or over the payload limit.
	EnvelopeCut string            `json:"envelopeCut,omitempty"`
	Checkpoint  *store.Checkpoint `json:"checkpoint"`
}

func runExport(ctx context.Context, m *Main, args []string) error {
	if len(args) > 0 && args[0] == "otlp" {
		return runExportOTLP(ctx, m, args[1:])
	}
	fs := m.flags("export")
	format := fs.String("format", "jsonl", "`FORMAT` of the lines: jsonl")
	since := fs.String("since", "", "start after this `SEQ`, or at this TIME (RFC 3339, or a duration ago such as 24h)")
	follow := fs.Bool("follow", false, "keep writing new envelopes until interrupted")
	fs.BoolVar(follow, "f", false, "the same as --follow")
	out := fs.String("o", "-", "write to `FILE` (- for stdout)")
	if err := m.parse(fs, exportHelp, args); err != nil {
		return err
	}
	if fs.NArg() != 1 || fs.Arg(0) != "audit" {
		return usageError{"want: export audit [--since SEQ|TIME] [--follow], or export otlp [--since SEQ|TIME]"}
	}
	if *format != "jsonl" {
		return usageError{fmt.Sprintf("--format %q: want jsonl", *format)}
	}
	from, cutoff := uint64(1), time.Time{}
	if *since != "" {
		if n, err := strconv.ParseUint(*since, 10, 64); err == nil {
			from = n + 1
		} else if d, err := config.ParseDuration(*since); err == nil {
			cutoff = m.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, *since); err == nil {
			cutoff = t
		} else {
			return usageError{fmt.Sprintf("--since %q: want a seq (1234), an RFC 3339 time or a duration (24h, 7d)", *since)}
		}
	}
	var w io.Writer = m.Stdout
	if *out != "-" {
		f, err := os.OpenFile(*out, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriter(w)
	defer bw.Flush()
	node, err := m.openLog(ctx, "export")
	if err != nil {
		return err
	}
	defer node.Close()
	x := &auditExport{node: node, w: bw, cutoff: cutoff}
	if !*follow {
		return x.upToHead(ctx, from)
	}
	return x.follow(ctx, from)
}

// auditExport writes audit lines, each after a checkpoint that covers it.
type auditExport struct {
	node    *hub.Node
	w       *bufio.Writer
	cutoff  time.Time
	pending []events.Event
}

// upToHead signs a checkpoint of the head and writes every envelope it
// covers.
func (x *auditExport) upToHead(ctx context.Context, from uint64) error {
	cp, err := x.node.Checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("sign a checkpoint to cover the export: %w", err)
	}
	for from <= cp.Seq {
		evs, next, err := x.node.Range(ctx, from, 4096)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Seq <= cp.Seq {
				x.add(e)
			}
		}
		from = next
	}
	return x.flush(ctx, &cp)
}

// follow writes what the log holds, then what it commits, a batch at a
// time after the checkpoint that covers it.
func (x *auditExport) follow(ctx context.Context, from uint64) error {
	return projections.FollowTicking(ctx, x.node.Follow, from, time.Second, func(e events.Event) error {
		x.add(e)
		return nil
	}, func() error {
		if len(x.pending) == 0 {
			return nil
		}
		cp, err := x.node.Checkpoint(ctx)
		if err != nil {
			return err
		}
		return x.flush(ctx, &cp)
	})
}

func (x *auditExport) add(e events.Event) {
	if e.Kind != events.KindExecutorAudit || (!x.cutoff.IsZero() && e.Time.Before(x.cutoff)) {
		return
	}
	x.pending = append(x.pending, e)
}

// flush writes the pending envelopes cp covers.
func (x *auditExport) flush(ctx context.Context, cp *store.Checkpoint) error {
	enc := json.NewEncoder(x.w)
	enc.SetEscapeHTML(false)
	kept := x.pending[:0]
	for _, e := range x.pending {
		if e.Seq > cp.Seq {
			kept = append(kept, e)
			continue
		}
		l := auditLine{Seq: e.Seq, EventID: e.ID, Time: e.Time, Hash: e.Hash.String(), RequestID: e.RequestID, SessionID: e.SessionID,
			Tool: e.Attrs.Get(events.AttrTool), Outcome: e.Outcome, Code: e.Code, Checkpoint: cp}
		env, err := events.ResolveValue(ctx, x.node, e.Attrs.Get("envelope")) // over 4 KiB: whole in the payload store
		if err != nil {
			return fmt.Errorf("the envelope of seq %d: %w", e.Seq, err)
		}
		if json.Valid([]byte(env)) {
			l.Envelope = json.RawMessage(env)
		} else {
			l.EnvelopeCut = env
		}
		if err := enc.Encode(&l); err != nil {
			return err
		}
	}
	x.pending = kept
	return x.w.Flush()
}
