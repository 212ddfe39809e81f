package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/export"
)

const exportHelp = `export audit [--format jsonl|ecs] [--since SEQ|TIME] [--follow] [-o FILE]
       tracebridge export otlp [--since SEQ|TIME]   (see export otlp --help)

Writes the log's audit trail for a SIEM: one JSON object per line, in seq
order. A line is a tool call's audit envelope (tool, descriptor, policy
decision, secrets by name, approval, redacted arguments and result, outcome,
code, classification) or a security event: a refused HTTP request or append,
a tool descriptor pinned, changed, removed, accepted or refused, a
configuration put in force, an approval or proposal decided, the log
archived. Each carries the event's seq, id, time, kind and chain hash, its
request and session, and the signed checkpoint that covers it (the chain up
to the checkpoint's seq verifies to its hash, so a line can be checked
against the log).

--format jsonl (the default) writes tracebridge's own lines, whose fields
docs/audit-export.schema.json defines. --format ecs writes Elastic Common
Schema 9.4 documents (event.kind, category, type, outcome, action; user,
source, url, gen_ai.tool, file, rule; the chain hash as event.hash, the
checkpoint in labels, the whole native line as event.original) that
Elasticsearch, Elastic Security and other ECS consumers ingest without a
custom parser. docs/audit-export.md maps each kind.

--since SEQ starts after that seq (resume where the last export ended); --since
TIME (RFC 3339, or a duration such as 24h) starts at that time. --follow keeps
writing new envelopes as the hub commits them, each batch after a checkpoint
that covers it has been signed (about once a second), until interrupted.`

func runExport(ctx context.Context, m *Main, args []string) error {
	if len(args) > 0 && args[0] == "otlp" {
		return runExportOTLP(ctx, m, args[1:])
	}
	fs := m.flags("export")
	format := fs.String("format", "jsonl", "`FORMAT` of the lines: jsonl (tracebridge's own) or ecs (Elastic Common Schema)")
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
	if f := export.Format(*format); f != export.JSONL && f != export.ECSFormat {
		return usageError{fmt.Sprintf("--format %q: want jsonl or ecs", *format)}
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
	node, err := m.openLog(ctx, "export")
	if err != nil {
		return err
	}
	defer node.Close()
	x := export.NewAudit(node, w, cutoff, export.Format(*format))
	if !*follow {
		return x.UpToHead(ctx, from)
	}
	return x.Follow(ctx, from)
}
