package main

import (
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/export"
)

// session replay --junit: a suite per file, a case per session and per run;
// the drifting run fails with the diff; the exit code still says drift.
func TestSessionReplayJUnit(t *testing.T) {
	repo := filepath.Join("..", "..", "artifacts", "sessions")
	b, err := os.ReadFile(filepath.Join(repo, "upstream-everything.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, `"step":"upstream"`) && strings.Contains(l, `"command":"get-sum"`) {
			l = l[:strings.Index(l, `"result":`)] + `"result":{"error":{"code":-32603,"message":"mutated"}}}`
		}
		lines = append(lines, strings.Replace(l, `"name":"upstream-everything"`, `"name":"mutated"`, 1))
	}
	mutated := filepath.Join(dir, "mutated.jsonl")
	os.WriteFile(mutated, []byte(strings.Join(lines, "\n")), 0o600)
	report := filepath.Join(dir, "report.xml")
	out, err := exec.Command(tbBin, "session", "replay", "--junit", report, filepath.Join(repo, "policy-denied.jsonl"), mutated).CombinedOutput()
	if err == nil {
		t.Fatalf("a drifting session exited 0:\n%s", out)
	}
	raw, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r export.JUnit
	if err := xml.Unmarshal(raw, &r); err != nil {
		t.Fatalf("not JUnit XML: %v\n%s", err, raw)
	}
	// One difference (get-sum's answer), one failing case: the run's, not
	// the session's as well.
	if len(r.Suites) != 2 || r.Suites[0].Failures != 0 || r.Suites[1].Failures != 1 || r.Failures != 1 || r.Tests != r.Suites[0].Tests+r.Suites[1].Tests {
		t.Fatalf("report: %+v", r)
	}
	var failedRun *export.Case
	for i, c := range r.Suites[1].Cases {
		if strings.Contains(c.Name, "get-sum") && c.Failure != nil {
			failedRun = &r.Suites[1].Cases[i]
		}
	}
	if failedRun == nil || !strings.Contains(failedRun.Failure.Text, "UpstreamError") {
		t.Fatalf("the drifting run's case does not carry its diff: %s", raw)
	}
}

// runs --format junit: a case per run, the failed ones failing with their
// code and what to do.
func TestRunsJUnit(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18")
	b.call(t, "regex_text_search", map[string]any{"query": "x", "text": "x"})
	b.call(t, "no_such_tool", map[string]any{})
	b.close(t)
	out, err := exec.Command(tbBin, "--data", data, "runs", "--format", "junit").Output()
	if err != nil {
		t.Fatal(err)
	}
	var r export.JUnit
	if err := xml.Unmarshal(out, &r); err != nil {
		t.Fatalf("not JUnit XML: %v\n%s", err, out)
	}
	if r.Failures != 1 || r.Tests < 2 {
		t.Fatalf("report: %s", out)
	}
	for _, c := range r.Suites[0].Cases {
		if c.Failure != nil && (c.Failure.Type != "UnknownTool" || !strings.Contains(c.Failure.Text, "tracebridge replay")) {
			t.Fatalf("failed case: %+v", c.Failure)
		}
	}
}
