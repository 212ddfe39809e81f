package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/replay"
	"github.com/tracebridge/tracebridge/store"
)

func runReplay(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("replay")
	format := fs.String("format", "text", "text, json, mermaid or md")
	timings := fs.Bool("timings", false, "add relative times to the diagram")
	artifacts := fs.String("artifacts", "", "also write the triad under `ROOT`: artifacts/logs/<slug>.log, .metadata.json, docs/diagrams/<slug>.mmd")
	archive := fs.String("archive", "", "read a run whose events were archived from the archive `DIR` (see `tracebridge archive`)")
	exitCode := fs.Bool("exit-code", false, "exit 1 when the run did not succeed (failed, denied or incomplete), for scripts and CI")
	if err := m.parse(fs, "replay REQUEST_ID [--format text|json|mermaid|md] [--timings] [--artifacts ROOT] [--archive DIR] [--exit-code]\n\nReconstructs one request from the log (the id is in every tool result's\n_meta[\"tracebridge/requestId\"]) and judges it against the expected chain of\nits kind: the first step that failed or never closed, its code, what it means\nand what to do, or where an interrupted run stopped.", args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"want one REQUEST_ID"}
	}
	req, err := m.requestID(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	switch *format {
	case "text", "json", "mermaid", "md":
	default:
		return usageError{fmt.Sprintf("--format %q: want text, json, mermaid or md", *format)}
	}
	node, err := m.openLog(ctx, "replay")
	if err != nil {
		return err
	}
	defer node.Close()
	evs, err := node.ByRequest(ctx, req)
	if err != nil {
		return err
	}
	if len(evs) == 0 && *archive != "" {
		// The archive is verified before anything of it is shown: its
		// segments' hashes, chain and signatures by this data dir's key.
		dir, err := m.dataDir()
		if err != nil {
			return err
		}
		trusted, err := dir.PublicKey()
		if err != nil {
			return err
		}
		if evs, err = store.ArchivedRequest(*archive, req, trusted); err != nil {
			return err
		}
	}
	if len(evs) == 0 {
		if first, _, err := node.Range(ctx, 1, 1); err == nil && len(first) == 1 && first[0].Seq > 1 && *archive == "" {
			return fmt.Errorf("no events for request %s in the log, which starts at seq %d (%s): older events were archived; read this run with `tracebridge replay %s --archive DIR`",
				req, first[0].Seq, first[0].Time.Format(time.RFC3339), req)
		}
		return fmt.Errorf("no events for request %s in this data dir (check --data, or the id)", req)
	}
	run := replay.Judge(req, evs)
	if err := m.printReplay(run, evs, *format, *timings, *artifacts); err != nil {
		return err
	}
	if *exitCode && run.Status != replay.StatusOK {
		return errFound
	}
	return nil
}

// printReplay writes a judged run in format, and its triad under artifacts
// when given.
func (m *Main) printReplay(run replay.Run, evs []events.Event, format string, timingsFlag bool, artifactsRoot string) error {
	req, timings, artifacts := run.RequestID, &timingsFlag, &artifactsRoot
	if *artifacts != "" {
		t, err := export.WriteTriad(*artifacts, run, export.TriadOptions{Version: Version, Source: "log " + m.data})
		if err != nil {
			return fmt.Errorf("write triad: %w", err)
		}
		defer fmt.Fprintf(m.Stderr, "triad:\n  %s\n  %s\n  %s\n", t.Log, t.Metadata, t.Diagram)
	}
	switch format {
	case "md":
		fmt.Fprint(m.Stdout, export.Markdown(run, *timings))
		return nil
	case "json":
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(run)
	case "mermaid":
		fmt.Fprint(m.Stdout, mermaid.Sequence(run.Events, mermaid.Options{Timings: *timings}))
		return nil
	}
	fmt.Fprintf(m.Stdout, "request %s  tool %s  status %s\n", req, run.Tool, run.Status)
	if run.User != "" {
		fmt.Fprintf(m.Stdout, "user:    %s\n", run.User)
	}
	if v := run.Verdict; run.Status != replay.StatusOK {
		fmt.Fprintf(m.Stdout, "verdict: %s at %s (%s): %s\naction:  %s\n\n", orDash(string(v.Code)), v.Boundary, v.Kind, v.Message, v.Action)
	} else {
		fmt.Fprintln(m.Stdout, "verdict: every step succeeded")
		fmt.Fprintln(m.Stdout)
	}
	if l := run.Later; l != nil {
		fmt.Fprintf(m.Stdout, "later:   its proposal met %s at %s (%s): %s\naction:  %s\n\n", orDash(string(l.Code)), l.Boundary, l.Kind, l.Message, l.Action)
	}
	if run.WaitMs > 0 {
		fmt.Fprintf(m.Stdout, "waited:  %.0f ms for an operator's approval\n\n", run.WaitMs)
	}
	for i := range run.Events { // in the order they happened (replay.Causal)
		writeEventLine(m.Stdout, &run.Events[i])
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
