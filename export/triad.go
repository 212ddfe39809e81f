package export

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/durable"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/replay"
)

// ScopeExclusions are the boundaries a recorded-session replay does not
// re-drive (the host's own state machines, its language servers and
// editors, and operators answer from the recording), so neither its drift
// check nor its triads judge them.
var ScopeExclusions = []events.Boundary{events.BoundaryProposal, events.BoundaryReview, events.BoundaryOperator, events.BoundaryLog, events.BoundaryLSP, events.BoundaryEditor}

// Metadata is the triad's metadata.json.
type Metadata struct {
	Slug            string             `json:"slug"`
	RequestID       events.ID          `json:"requestId"`
	OperationIDs    []events.ID        `json:"operationIds"`
	SessionID       events.ID          `json:"sessionId,omitzero"`
	Method          string             `json:"method,omitempty"`
	Tool            string             `json:"tool,omitempty"`
	Status          string             `json:"status"`
	Verdict         replay.Verdict     `json:"verdict"`
	Git             *Git               `json:"git,omitempty"`
	Host            string             `json:"host,omitempty"` // the machine that wrote it (not in deterministic triads)
	Tracebridge     string             `json:"tracebridge"`
	Input           string             `json:"input,omitempty"`  // the request's params, redacted, cut at 512 bytes
	Result          string             `json:"result,omitempty"` // what the run returned (audit summary, or the verdict)
	Events          int                `json:"events"`
	DurationMs      float64            `json:"durationMs"`
	BoundaryMs      map[string]float64 `json:"boundaryMs,omitempty"`
	ScopeExclusions []events.Boundary  `json:"scopeExclusions"`
	Source          string             `json:"source"` // log, or the recorded session file
}

// Git is the state of the repository the triad was written into.
type Git struct {
	Branch string `json:"branch"`
	Commit string `json:"commit"`
	Dirty  bool   `json:"dirty"`
}

// TriadOptions shapes a triad.
type TriadOptions struct {
	Slug    string // default: <tool|method>-<status>-<request id>
	Version string // tracebridge version
	Source  string
	// Deterministic leaves out what differs between two runs of the same
	// recorded session: wall times, durations, git state.
	Deterministic bool
	// Scrub rewrites attribute values before they are written (a replay's
	// temporary directory becomes $DATA).
	Scrub func(string) string
}

// Triad lists the files of one written triad.
type Triad struct {
	Log, Metadata, Diagram string
}

var slugUnsafe = regexp.MustCompile(`[^a-z0-9]+`)

// Slug makes a file-name-safe slug of parts.
func Slug(parts ...string) string {
	s := slugUnsafe.ReplaceAllString(strings.ToLower(strings.Join(parts, "-")), "-")
	return strings.Trim(s, "-")
}

// WriteTriad writes run's log, metadata and diagram under root:
// artifacts/logs/<slug>.log, artifacts/logs/<slug>.metadata.json and
// docs/diagrams/<slug>.mmd.
func WriteTriad(root string, run replay.Run, opts TriadOptions) (Triad, error) {
	if opts.Scrub == nil {
		opts.Scrub = func(s string) string { return s }
	} else {
		run = scrubbed(run, opts.Scrub)
	}
	label := run.Tool
	if label == "" {
		label = run.Method
	}
	if opts.Slug == "" {
		opts.Slug = Slug(label, run.Status, run.RequestID.String())
	}
	t := Triad{
		Log:      filepath.Join(root, "artifacts", "logs", opts.Slug+".log"),
		Metadata: filepath.Join(root, "artifacts", "logs", opts.Slug+".metadata.json"),
		Diagram:  filepath.Join(root, "docs", "diagrams", opts.Slug+".mmd"),
	}
	md := metadataOf(run, opts)
	if !opts.Deterministic {
		md.Git = gitState(root)
		md.Host, _ = os.Hostname()
	}
	mdb, err := json.MarshalIndent(md, "", "  ")
	if err != nil {
		return t, err
	}
	diagram := mermaid.Sequence(run.Events, mermaid.Options{Timings: !opts.Deterministic})
	for path, data := range map[string][]byte{t.Log: []byte(timeline(run, opts)), t.Metadata: append(mdb, '\n'), t.Diagram: []byte(diagram)} {
		if err := durable.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return t, err
		}
		if err := durable.WriteFileAtomic(path, data, 0o644); err != nil {
			return t, err
		}
	}
	return t, nil
}

// scrubbed is run with scrub applied to every attribute and message.
func scrubbed(run replay.Run, scrub func(string) string) replay.Run {
	evs := make([]events.Event, len(run.Events))
	for i, e := range run.Events {
		attrs := make(map[string]string, len(e.Attrs))
		for k, v := range e.Attrs.All() {
			attrs[k] = scrub(v)
		}
		e.Attrs = events.AttrsOf(attrs)
		evs[i] = e
	}
	run.Events = evs
	run.Verdict.Message = scrub(run.Verdict.Message)
	return run
}

func metadataOf(run replay.Run, opts TriadOptions) Metadata {
	md := Metadata{Slug: opts.Slug, RequestID: run.RequestID, OperationIDs: []events.ID{}, SessionID: run.SessionID, Method: run.Method,
		Tool: run.Tool, Status: run.Status, Verdict: run.Verdict, Tracebridge: opts.Version, Events: len(run.Events),
		ScopeExclusions: ScopeExclusions, Source: opts.Source}
	seen := map[events.ID]bool{}
	for i := range run.Events {
		e := &run.Events[i]
		if !e.OperationID.IsZero() && !seen[e.OperationID] {
			seen[e.OperationID] = true
			md.OperationIDs = append(md.OperationIDs, e.OperationID)
		}
		switch e.Kind {
		case events.KindMCPResponseSent:
			md.Input = cut(opts.Scrub(e.Attrs.Get(events.AttrParams)), 512)
		case events.KindExecutorAudit:
			var env struct {
				Result string `json:"result"`
			}
			if json.Unmarshal([]byte(e.Attrs.Get(events.AttrEnvelope)), &env) == nil && env.Result != "" {
				md.Result = cut(opts.Scrub(env.Result), 512)
			}
		}
	}
	if md.Result == "" && run.Status != replay.StatusOK {
		md.Result = run.Verdict.Message
	}
	if n := len(run.Events); n > 0 && !opts.Deterministic {
		md.DurationMs = events.Ms(run.Events[n-1].Time.Sub(run.Events[0].Time))
		md.BoundaryMs = run.Durations
	}
	return md
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// timeline is the triad's log: the verdict, then one line per event.
func timeline(run replay.Run, opts TriadOptions) string {
	var b strings.Builder
	session := "-"
	if !run.SessionID.IsZero() {
		session = run.SessionID.String()
	}
	fmt.Fprintf(&b, "request %s  session %s  %s %s  status %s\n", run.RequestID, session, orNone(run.Method), run.Tool, run.Status)
	if v := run.Verdict; run.Status != replay.StatusOK {
		fmt.Fprintf(&b, "verdict: %s at %s (%s): %s\naction:  %s\n", orNone(string(v.Code)), v.Boundary, v.Kind, opts.Scrub(v.Message), v.Action)
	} else {
		b.WriteString("verdict: every step succeeded\n")
	}
	b.WriteString("\n")
	var t0 = run.Events
	for i := range run.Events {
		e := &run.Events[i]
		if opts.Deterministic {
			fmt.Fprintf(&b, "%3d ", i+1)
		} else {
			fmt.Fprintf(&b, "%7d +%9.3fms ", e.Seq, events.Ms(e.Time.Sub(t0[0].Time)))
		}
		fmt.Fprintf(&b, "%-9s %-26s %-20s %-11s", e.Boundary, e.Kind, e.From+"→"+e.To, e.Outcome)
		if e.Code != "" {
			fmt.Fprintf(&b, " code=%s", e.Code)
		}
		keys := make([]string, 0, len(e.Attrs))
		for k := range e.Attrs.All() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, " %s=%q", k, cut(opts.Scrub(e.Attrs.Get(k)), 120))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// gitState describes the repository at root, or nil when it is none (or
// git is not installed).
func gitState(root string) *Git {
	run := func(args ...string) (string, bool) {
		out, err := exec.Command("git", append([]string{"-C", root}, args...)...).Output()
		return strings.TrimSpace(string(out)), err == nil
	}
	commit, ok := run("rev-parse", "HEAD")
	if !ok {
		return nil
	}
	branch, _ := run("rev-parse", "--abbrev-ref", "HEAD")
	status, _ := run("status", "--porcelain")
	return &Git{Branch: branch, Commit: commit, Dirty: status != ""}
}
