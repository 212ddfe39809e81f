package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

func runRuns(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("runs")
	status := fs.String("status", "", "only runs with this status: ok, failed, denied or incomplete")
	tool := fs.String("tool", "", "only calls of this tool")
	session := fs.String("session", "", "only runs of this MCP session id")
	limit := fs.Int("limit", 20, "at most `N` runs, newest first (0: all)")
	kind := fs.String("kind", "mcp", "`KIND` of runs: mcp (AI clients' requests), other (operator actions, UI views, load), or all")
	fs.IntVar(limit, "n", 20, "the same as --limit (as tail -n)")
	asJSON := fs.Bool("json", false, "print one JSON object per line (the same as --format json)")
	format := fs.String("format", "table", "`FORMAT`: table, json (one object per line) or junit (a JUnit XML report: a test case per run, failing with its verdict)")
	if err := m.parse(fs, "runs [--kind mcp|other|all] [--status ok|failed|denied|incomplete] [--tool T] [--session S] [--limit N|-n N] [--format table|json|junit] [--json]\n\nLists recorded runs (one per request id), newest first, from the runs\nprojection: method, tool, status, duration, event count and, for runs that\ndid not succeed, the verdict's code and boundary. `tracebridge replay ID`\nexplains one. --format junit reports a session's runs to CI: each run a test\ncase, the ones that did not succeed failing with their code, boundary, message\nand action (`runs --session SID --format junit > report.xml`).", args); err != nil {
		return err
	}
	switch *format {
	case "table", "json", "junit":
	default:
		return usageError{fmt.Sprintf("--format %q: want table, json or junit", *format)}
	}
	if *asJSON {
		*format = "json"
	}
	if fs.NArg() != 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	q := projections.Query{View: projections.ViewRuns, Status: *status, Tool: *tool, Limit: *limit}
	switch *status {
	case "", replay.StatusOK, replay.StatusFailed, replay.StatusDenied, replay.StatusIncomplete:
	default:
		return usageError{fmt.Sprintf("--status %q: want ok, failed, denied or incomplete", *status)}
	}
	switch *kind {
	case projections.KindMCP, projections.KindOther:
		q.Kind = *kind
	case "all":
	default:
		return usageError{fmt.Sprintf("--kind %q: want mcp, other or all", *kind)}
	}
	switch {
	case *limit < 0:
		return usageError{"--limit must be 0 (all) or more"}
	case *limit == 0:
		q.Limit = 1 << 30
	}
	if *session != "" {
		id, err := events.ParseID(*session)
		if err != nil {
			return usageError{"--session: " + err.Error()}
		}
		q.Session = id
	}
	node, err := m.openLog(ctx, "runs")
	if err != nil {
		return err
	}
	defer node.Close()
	rows, err := node.View(ctx, q)
	if err != nil {
		return err
	}
	// Runs whose events were archived keep their summaries (the views keep
	// their state); say so, since replay needs --archive for them.
	archivedBefore := uint64(0)
	if first, _, err := node.Range(ctx, 1, 1); err == nil && len(first) == 1 && first[0].Seq > 1 {
		archivedBefore = first[0].Seq
	}
	switch *format {
	case "json":
		for _, r := range rows {
			fmt.Fprintf(m.Stdout, "%s\n", r)
		}
		return nil
	case "junit":
		return runsReport(rows, *session).Write(m.Stdout)
	}
	return writeRuns(m.Stdout, rows, archivedBefore)
}

// runsReport is runs as a JUnit report: one suite (the session's, when one
// was asked for), a case per run in the order they started, failing when
// the run did not succeed.
func runsReport(rows []json.RawMessage, session string) *export.JUnit {
	name := "runs"
	if session != "" {
		name = "session " + strings.ToUpper(session)
	}
	suite := export.Suite{Name: name}
	for i := len(rows) - 1; i >= 0; i-- { // oldest first
		var s replay.Summary
		if json.Unmarshal(rows[i], &s) != nil {
			continue
		}
		c := export.Case{Name: strings.TrimSpace(orDash(s.Method) + " " + s.Tool + " " + s.RequestID.String()), Classname: "tracebridge." + orDash(s.Method),
			Time: s.DurationMs / 1000}
		if s.Status != replay.StatusOK {
			v := s.Verdict
			c.Failure = &export.Problem{Message: fmt.Sprintf("%s: %s at %s", s.Status, orDash(string(v.Code)), v.Boundary), Type: orDash(string(v.Code)),
				Text: fmt.Sprintf("%s\naction: %s\nreplay: tracebridge replay %s", v.Message, v.Action, s.RequestID)}
		}
		suite.Add(c)
	}
	return &export.JUnit{Name: "tracebridge runs", Suites: []export.Suite{suite}}
}

// writeRuns prints rows of the runs view as a table a person reads; runs
// whose events all precede seq archivedBefore (the log's first) are marked
// archived.
func writeRuns(w io.Writer, rows []json.RawMessage, archivedBefore uint64) error {
	sums := make([]replay.Summary, len(rows))
	for i, r := range rows {
		if err := json.Unmarshal(r, &sums[i]); err != nil {
			return err
		}
	}
	if len(sums) == 0 {
		fmt.Fprintln(w, "no runs match")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tSESSION\tSTARTED\tMETHOD\tTOOL\tSTATUS\tMS\tWAIT\tEVENTS\tVERDICT")
	for _, s := range sums {
		verdict := ""
		if v := s.Verdict; s.Status != replay.StatusOK {
			verdict = orDash(string(v.Code)) + " at " + string(v.Boundary)
		}
		session := "-"
		if !s.SessionID.IsZero() {
			session = s.SessionID.String()
		}
		if l := s.Later; l != nil {
			verdict = strings.TrimSpace(verdict + "; its proposal later: " + orDash(string(l.Code)) + " at " + string(l.Boundary))
		}
		if archivedBefore > 0 && s.LastSeq < archivedBefore {
			verdict = strings.TrimSpace(verdict + " (events archived: replay --archive DIR)")
		}
		wait := "-"
		if s.WaitMs > 0 {
			wait = fmt.Sprintf("%.0f", s.WaitMs)
		}
		method := s.Method
		if method == "" && s.Command != "" {
			method = "pipe " + s.Command // an operator's command
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%.1f\t%s\t%d\t%s\n", s.RequestID, session, s.Start.Local().Format("15:04:05"),
			orDash(method), orDash(s.Tool), s.Status, s.DurationMs, wait, s.Events, verdict)
	}
	return tw.Flush()
}
