package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/sessions"
)

const sessionUsage = `session list [--limit N] [--json]
       tracebridge session export SESSION_ID -o FILE.jsonl|- [--config FILE] [--name NAME]
       tracebridge session replay FILE... [--update] [--artifacts ROOT] [--junit FILE] [--keep DIR]

list shows the MCP sessions of the data dir, newest first: the id to export,
the client, when it started and ended, and how many requests it made.

export writes a portable, redacted, versioned file (` + sessions.SessionSchema + `) with
everything needed to re-drive an MCP session: the client's requests in
order, the operators' proposal decisions between them, the host's pipe
answers, the tracebridge.toml in force, and the crossings each request left.

replay re-drives each file against this build in-process: a real bridge
gets the client's requests, a real pipe server gives the recorded host
answers, and ids and the clock are deterministic. It compares the new
crossings with the recorded ones (kind, boundary, participants, outcome,
code) and on drift prints which step and event differ and exits 1.
--update accepts the new behaviour into the files; --artifacts ROOT writes a
triad per request; --junit FILE writes a JUnit report for CI (a test case per
session and per drifting step, the diff as the failure text). Proposal, review and operator events come from the
host's and operators' own state machines, which a re-drive answers from the
recording; they are outside the comparison (metadata: scopeExclusions).

Flags of each subcommand (tracebridge session SUBCOMMAND --help for more):
  list     --limit N (0: all), -n N, --all (also synthetic sessions), --json
  export   -o FILE (- for stdout), --config FILE (default: the one the bridge
           recorded), --name NAME
  replay   --update (accept drift into the files), --artifacts ROOT (a triad
           per request)`

func runSession(ctx context.Context, m *Main, args []string) error {
	if len(args) > 0 {
		switch args[0] {
		case "export":
			return runSessionExport(ctx, m, args[1:])
		case "replay":
			return runSessionReplay(ctx, m, args[1:])
		case "list":
			return runSessionList(ctx, m, args[1:])
		}
	}
	fs := m.flags("session")
	if err := m.parse(fs, sessionUsage, args); err != nil {
		return err
	}
	return usageError{"want list, export or replay"}
}

func runSessionList(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("session list")
	limit := fs.Int("limit", 20, "at most `N` sessions, newest first (0: all)")
	fs.IntVar(limit, "n", 20, "the same as --limit")
	asJSON := fs.Bool("json", false, "print one JSON session per line")
	all := fs.Bool("all", false, "also sessions no MCP client opened (synthetic load)")
	if err := m.parse(fs, "session list [--limit N] [--all] [--json]\n\nLists the MCP sessions of the data dir (those a client initialized), newest\nfirst.", args); err != nil {
		return err
	}
	if *limit < 0 {
		return usageError{"--limit must be 0 (all) or more"}
	}
	// The limit counts the sessions shown: synthetic ones are left out
	// before it applies, not after (a burst of them hid the real ones).
	q := projections.Query{View: projections.ViewSessions, Limit: 1 << 30}
	if *all && *limit > 0 {
		q.Limit = *limit
	}
	node, err := m.openLog(ctx, "session")
	if err != nil {
		return err
	}
	defer node.Close()
	viewed, err := node.View(ctx, q)
	if err != nil {
		return err
	}
	var rows []json.RawMessage
	for _, r := range viewed {
		var s projections.Session
		if json.Unmarshal(r, &s) == nil && (!s.Synthetic() || *all) {
			rows = append(rows, r)
		}
		if *limit > 0 && len(rows) == *limit {
			break
		}
	}
	if *asJSON {
		for _, r := range rows {
			fmt.Fprintf(m.Stdout, "%s\n", r)
		}
		return nil
	}
	if len(rows) == 0 {
		fmt.Fprintln(m.Stdout, "no MCP sessions yet")
		return nil
	}
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tCLIENT\tSTARTED\tENDED\tSTATE\tREQUESTS")
	for _, r := range rows {
		var s projections.Session
		if err := json.Unmarshal(r, &s); err != nil {
			return err
		}
		ended := "-"
		if !s.End.IsZero() {
			ended = s.End.Local().Format("15:04:05")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\n", s.SessionID, orDash(s.Client), s.Start.Local().Format("2006-01-02 15:04:05"), ended, s.State, s.Requests)
	}
	return tw.Flush()
}

func runSessionExport(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("session export")
	out := fs.String("o", "", "write the session to `FILE` (.jsonl; - for stdout)")
	cfgPath := fs.String("config", "", "re-drive with the tracebridge.toml `FILE` (default: the configuration the bridge recorded when the session started)")
	nameFlag := fs.String("name", "", "the session's name in the file (default: the file's base name)")
	if err := m.parse(fs, sessionUsage, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"want one SESSION_ID (see `tracebridge runs` or the sessionId in a run's JSON)"}
	}
	if *out == "" {
		return usageError{"-o FILE is required"}
	}
	sid, err := m.sessionID(ctx, fs.Arg(0))
	if err != nil {
		return err
	}
	var cfgText, today string
	if *cfgPath != "" {
		cfgText, err = m.configText(*cfgPath)
	} else {
		today, err = m.configText("") // for a log that predates the recorded configuration
	}
	if err != nil {
		return err
	}
	node, err := m.openLog(ctx, "session")
	if err != nil {
		return err
	}
	defer node.Close()
	name := *nameFlag
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(*out), filepath.Ext(*out))
		if *out == "-" {
			name = ""
		}
	}
	s, err := exportSession(ctx, node, sid, cfgText, today, name)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		return err
	}
	if *out == "-" { // stdout, as every other tool reads "-"
		_, err := m.Stdout.Write(buf.Bytes())
		return err
	}
	if err := durable.WriteFileAtomic(*out, buf.Bytes(), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "wrote %s: %d steps of session %s\n", *out, len(s.Steps), sid)
	return nil
}

// exportSession is session sid of log as a recorded-session file named
// name ("": session-<id>), re-driven with cfgText ("": the configuration
// the bridge recorded, or today's, for a log that predates it).
func exportSession(ctx context.Context, log sessions.EvidenceLog, sid events.ID, cfgText, today, name string) (*sessions.Session, error) {
	in, err := sessions.Gather(ctx, log, sid)
	if err != nil {
		return nil, err
	}
	in.Config, in.TodayConfig, in.Version, in.Name = cfgText, today, Version, name
	if in.Name == "" {
		in.Name = "session-" + strings.ToLower(sid.String())
	}
	return sessions.Export(in)
}

// configText is the tracebridge.toml `tracebridge mcp` would use, as text
// ("" for the defaults).
func (m *Main) configText(flagPath string) (string, error) {
	path, named := m.configPath(flagPath)
	if path == "" {
		return "", nil
	}
	b, err := os.ReadFile(path)
	if !named && errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if _, err := config.Parse(path, b); err != nil {
		return "", err
	}
	return string(b), nil
}

func runSessionReplay(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("session replay")
	update := fs.Bool("update", false, "accept the new behaviour: rewrite each file's recorded crossings")
	artifacts := fs.String("artifacts", "", "write a triad per request under `ROOT` (artifacts/logs, docs/diagrams)")
	junit := fs.String("junit", "", "write a JUnit XML report to `FILE` (- for stdout): a test case per session and per drifting step")
	keep := fs.String("keep", "", "keep each re-drive's evidence in a data dir under `DIR` (DIR/<session name>) to inspect it with runs, replay, the UI or export")
	if err := m.parse(fs, sessionUsage, args); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return usageError{"want one or more session files"}
	}
	drifted := 0
	report := &export.JUnit{Name: "tracebridge session replay"}
	for _, path := range fs.Args() {
		t0 := time.Now()
		res, err := m.replaySessionFile(ctx, path, *update, *artifacts, *keep)
		if *junit != "" {
			report.Suites = append(report.Suites, sessionSuite(path, res, err, time.Since(t0)))
		}
		if err != nil {
			if *junit != "" { // the report says which file could not be re-driven; the others still run
				fmt.Fprintf(m.Stderr, "%s: %v\n", path, err)
				drifted++
				continue
			}
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(res.drift) > 0 {
			drifted++
		}
	}
	if *junit != "" {
		if err := m.writeReport(*junit, report); err != nil {
			return err
		}
	}
	if drifted > 0 {
		fmt.Fprintf(m.Stdout, "\n%d session(s) drifted from their recording; if the new behaviour is right, run again with --update\n", drifted)
		return errFound
	}
	return nil
}

// replayed is what one file's re-drive came to: its name, its runs' labels
// and the drift (none when the update accepted it).
type replayed struct {
	name   string
	labels []string
	drift  []sessions.Drift
}

// replaySessionFile re-drives one file.
func (m *Main) replaySessionFile(ctx context.Context, path string, update bool, artifacts, keep string) (replayed, error) {
	f, err := os.Open(path)
	if err != nil {
		return replayed{}, err
	}
	s, err := sessions.DecodeSession(f)
	f.Close()
	if err != nil {
		return replayed{}, err
	}
	tmp, err := os.MkdirTemp("", "tb-session-")
	if err != nil {
		return replayed{}, err
	}
	defer os.RemoveAll(tmp)
	dir := hub.DataDir(filepath.Join(tmp, "d"))
	if keep != "" {
		dir = hub.DataDir(filepath.Join(keep, s.Header.Name))
		if entries, err := os.ReadDir(string(dir)); err == nil && len(entries) > 0 {
			return replayed{}, fmt.Errorf("--keep: %s holds something already; use an empty dir", dir)
		}
	}
	if err := dir.Ensure(); err != nil {
		return replayed{}, err
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	if m.logLevel != "" || m.Getenv("TRACEBRIDGE_LOG") != "" {
		log = m.logger()
	}
	node, err := hub.Open(ctx, hub.Options{Dir: dir, Role: hub.Elect, Logger: log, Now: sessions.Clock(s), Name: "session-replay"})
	if err != nil {
		return replayed{}, err
	}
	defer node.Close()
	res, err := sessions.Redrive(ctx, s, sessions.RedriveOptions{Log: node, PipePath: dir.PipePath(), Logger: log,
		Extra: testTools(), Version: Version})
	if err != nil {
		return replayed{}, err
	}
	name := s.Header.Name
	out := replayed{name: name}
	for k := range res.Runs {
		out.labels = append(out.labels, fmt.Sprintf("run %02d (%s)", k+1, s.Steps[res.Steps[k]].Label()))
	}
	if artifacts != "" {
		scrub := strings.NewReplacer(tmp, "$TMP", string(dir), "$TMP/d")
		if err := writeSessionTriads(ctx, node, s, res, artifacts, filepath.Base(path), scrub.Replace); err != nil {
			return replayed{}, err
		}
	}
	if len(res.Drift) == 0 {
		fmt.Fprintf(m.Stdout, "%s: %d steps, %d runs re-driven, no drift\n", name, len(s.Steps), len(res.Runs))
		return out, nil
	}
	if update {
		if err := res.Accept(ctx, node, s); err != nil {
			return replayed{}, err
		}
		var buf bytes.Buffer
		if err := s.Encode(&buf); err != nil {
			return replayed{}, err
		}
		if err := durable.WriteFileAtomic(path, buf.Bytes(), 0o644); err != nil {
			return replayed{}, err
		}
		fmt.Fprintf(m.Stdout, "%s: %d difference(s) accepted into %s\n", name, len(res.Drift), path)
		return out, nil
	}
	fmt.Fprintf(m.Stdout, "%s: DRIFT\n", name)
	for _, d := range res.Drift {
		fmt.Fprintf(m.Stdout, "  %s\n", d)
	}
	out.drift = res.Drift
	return out, nil
}

// writeSessionTriads writes a triad per re-driven run of s under root,
// deterministic, its log holding what the re-drive's log holds, whole.
func writeSessionTriads(ctx context.Context, node *hub.Node, s *sessions.Session, res *sessions.Redriven, root, file string, scrub func(string) string) error {
	for k, run := range res.Runs {
		label := s.Steps[res.Steps[k]].Label()
		for i := range run.Events {
			var err error
			if run.Events[i], err = events.Resolve(ctx, node, run.Events[i]); err != nil {
				return err
			}
		}
		_, err := export.WriteTriad(root, run, export.TriadOptions{
			Slug: export.Slug(s.Header.Name, fmt.Sprintf("%02d", k+1), label), Version: Version, Deterministic: true,
			Source: "artifacts/sessions/" + file, Scrub: scrub})
		if err != nil {
			return err
		}
	}
	return nil
}

// sessionSuite is one file's re-drive as a JUnit test suite: the session
// as a case (failing on any drift), each re-driven run as a case (failing
// with its drift), and each upstream request that drifted.
func sessionSuite(path string, res replayed, err error, took time.Duration) export.Suite {
	name := res.name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	suite := export.Suite{Name: name, Time: took.Seconds()}
	class := "session." + name
	if err != nil {
		suite.Add(export.Case{Name: name, Classname: class, Error: &export.Problem{Message: "the session could not be re-driven", Type: "Error", Text: err.Error()}})
		return suite
	}
	// Each difference fails exactly one case: its run's, its upstream
	// request's, or (neither) the session's.
	whole := export.Case{Name: name, Classname: class, Time: took.Seconds()}
	var rest []string
	for _, d := range res.drift {
		if d.Run < 0 || d.Run > len(res.labels) {
			rest = append(rest, d.String())
		}
	}
	if len(rest) > 0 {
		whole.Failure = &export.Problem{Message: fmt.Sprintf("%d difference(s) from the recording", len(rest)), Type: "Drift", Text: strings.Join(rest, "\n")}
	}
	suite.Add(whole)
	for k, label := range res.labels {
		c := export.Case{Name: label, Classname: class}
		for _, d := range res.drift {
			if d.Run == k+1 {
				if c.Failure == nil {
					c.Failure = &export.Problem{Message: "drift", Type: "Drift"}
				}
				c.Failure.Text += d.String() + "\n"
			}
		}
		suite.Add(c)
	}
	for _, d := range res.drift {
		if d.Run == 0 { // an upstream request the bridge would send differently
			suite.Add(export.Case{Name: d.Label, Classname: class, Failure: &export.Problem{Message: "drift", Type: "Drift", Text: d.String()}})
		}
	}
	return suite
}

// writeReport writes a JUnit report to path ("-": stdout).
func (m *Main) writeReport(path string, r *export.JUnit) error {
	if path == "-" {
		return r.Write(m.Stdout)
	}
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		return err
	}
	return durable.WriteFileAtomic(path, buf.Bytes(), 0o644)
}
