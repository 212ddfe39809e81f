package mermaid

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func ev(kind string, outcome events.Outcome, code events.Code, ms int, attrs map[string]string) events.Event {
	info, _ := events.Lookup(kind)
	return events.Event{Kind: kind, Boundary: info.Boundary, From: info.From, To: info.To, Outcome: outcome, Code: code,
		Time: time.Date(2026, 1, 1, 0, 0, 0, ms*int(time.Millisecond), time.UTC), Attrs: events.AttrsOf(attrs)}
}

var runs = map[string][]events.Event{
	"success": {
		ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": "regex_text_search"}),
		ev(events.KindExecutorStarted, events.OK, "", 1, map[string]string{"tool": "regex_text_search"}),
		ev(events.KindPolicyDecided, events.OK, "", 1, map[string]string{"reason": "all required capabilities granted"}),
		ev(events.KindToolStarted, events.OK, "", 2, nil),
		ev(events.KindToolCompleted, events.OK, "", 5, nil),
		ev(events.KindMCPResponseSent, events.OK, "", 6, nil),
	},
	"policy_denied": {
		ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": "test_write"}),
		ev(events.KindPolicyDecided, events.Denied, events.CodePolicyDenied, 1, map[string]string{"reason": "capability workspace.write not granted"}),
		ev(events.KindExecutorAudit, events.Denied, events.CodePolicyDenied, 1, nil),
		ev(events.KindMCPResponseSent, events.Denied, events.CodePolicyDenied, 2, nil),
	},
	"pipe_unavailable": {
		ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": "get_selection"}),
		ev(events.KindPipeAttempt, events.OK, "", 1, nil),
		ev(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, 1, map[string]string{"error": "dial unix /x/host.sock: connect: no such file"}),
		ev(events.KindMCPResponseSent, events.Unavailable, events.CodePipeUnavailable, 2, nil),
	},
	"upstream": {
		ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": "github__create_issue"}),
		ev(events.KindToolStarted, events.OK, "", 1, nil),
		ev(events.KindUpstreamRequestSent, events.OK, "", 2, map[string]string{"server": "github"}),
		ev(events.KindUpstreamResponse, events.Error, events.CodeUpstreamError, 9, map[string]string{"server": "github", "error": "JSON-RPC error -32602"}),
		ev(events.KindUpstreamRequestSent, events.OK, "", 10, map[string]string{"server": "docs-1\nparticipant Evil"}),
		ev(events.KindToolCompleted, events.Error, events.CodeUpstreamError, 11, nil),
	},
	"hostile_labels": {
		ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": "x\nparticipant Evil\nClient->>Evil: pwned"}),
		ev(events.KindPolicyDecided, events.Denied, events.CodePolicyDenied, 1, map[string]string{"reason": "%%{init: {'theme':'dark'}}%%; Note over Client: injected #35; <script>"}),
		{Kind: events.KindToolCompleted, From: "Evil\nparticipant", To: "Tool", Outcome: events.Error, Code: "X-->>Y"},
	},
}

func TestGoldenDiagrams(t *testing.T) {
	for name, evs := range runs {
		for _, timings := range []bool{false, true} {
			file := name
			if timings {
				file += "_timings"
			}
			t.Run(file, func(t *testing.T) {
				got := Sequence(evs, Options{Timings: timings})
				path := filepath.Join("testdata", file+".mmd")
				if *update {
					os.MkdirAll("testdata", 0o755)
					os.WriteFile(path, []byte(got), 0o644)
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				if got != string(want) {
					t.Fatalf("diagram differs from %s:\n%s", path, got)
				}
				if Sequence(evs, Options{Timings: timings}) != got {
					t.Fatal("not deterministic")
				}
			})
		}
	}
}

// No text can add a statement: every line is one of the forms the renderer
// writes, and participants are only the catalog's.
var line = regexp.MustCompile(`^(sequenceDiagram|    participant (Client|Bridge|Executor|Policy|Secrets|Approval|Tool|Pipe|Host|Operator|Hub|Other)|    participant Upstream_[A-Za-z0-9]+ as Upstream [A-Za-z0-9]+|    (Client|Bridge|Executor|Policy|Secrets|Approval|Tool|Upstream_[A-Za-z0-9]+|Pipe|Host|Operator|Hub|Other)(->>|-x)(Client|Bridge|Executor|Policy|Secrets|Approval|Tool|Upstream_[A-Za-z0-9]+|Pipe|Host|Operator|Hub|Other): [A-Za-z0-9 ._/(),=+#;…]*|    Note over [A-Za-z]+: [A-Za-z0-9 ._/(),=+#;…]*|    rect rgb\(255, 228, 225\)|    end)$`)

func checkStructure(t *testing.T, out string) {
	t.Helper()
	for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !line.MatchString(l) {
			t.Fatalf("line %q is not one the renderer writes", l)
		}
	}
}

func TestHostileLabelsStayInert(t *testing.T) {
	out := Sequence(runs["hostile_labels"], Options{})
	checkStructure(t, out)
	// The hostile text survives only as escaped label text on its own line.
	for _, bad := range []string{"\n    participant Evil", "\nparticipant Evil", "%%", "->>Evil", "<script>", "\nNote over Client", "\n    Note over Client"} {
		if strings.Contains(out, bad) {
			t.Fatalf("diagram contains %q:\n%s", bad, out)
		}
	}
}

func FuzzSequenceLabels(f *testing.F) {
	f.Add("x\nparticipant Evil", "reason; Note over A: b", "From")
	f.Fuzz(func(t *testing.T, tool, reason, from string) {
		evs := []events.Event{
			ev(events.KindMCPRequestReceived, events.OK, "", 0, map[string]string{"tool": tool}),
			ev(events.KindPolicyDecided, events.Denied, events.Code(reason), 1, map[string]string{"reason": reason}),
			{Kind: tool, From: from, To: reason, Outcome: events.Error},
		}
		checkStructure(t, Sequence(evs, Options{Timings: true}))
	})
}

// A long note ends between words, not inside one.
func TestNotesAreCutBetweenWords(t *testing.T) {
	got := truncate(strings.Repeat("word ", 40), 120)
	if !strings.HasSuffix(got, "word…") || len(got) > 120+len("…") {
		t.Fatalf("cut mid-word: %q", got)
	}
	if got := truncate(strings.Repeat("x", 200), 120); got != strings.Repeat("x", 120)+"…" {
		t.Fatalf("one long word: %q", got)
	}
}
