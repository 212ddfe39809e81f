package sessions

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/internal/golden"
)

// onLine replaces old with new on the first line of a session file that
// holds both match and old.
func onLine(match, old, new string) func(string) string {
	return func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.Contains(l, match) && strings.Contains(l, old) {
				lines[i] = strings.Replace(l, old, new, 1)
				break
			}
		}
		return strings.Join(lines, "\n")
	}
}

// Each way a recording and today's bridge can part shows as drift where
// they first part, in words an operator can act on. The texts are golden
// (testdata/drift-cases.txt; -update writes them).
func TestDriftIsFoundWhereTheyPart(t *testing.T) {
	if testing.Short() {
		t.Skip("re-drives committed sessions (make test runs it)")
	}
	cases := []struct {
		name, file string
		edit       func(string) string
		want       string // in the first drift
	}{
		{"the operator's approval is now a denial", "approval-approved.jsonl",
			onLine(`"decisions"`, `"decision":"approve"`, `"decision":"deny"`), "got      approval.decided Operator→Approval denied ApprovalDenied"},
		{"the bridge would send an upstream other arguments", "upstream-filesystem.jsonl",
			onLine(`"step":"upstream"`, `"content":"from the recording\n"`, `"content":"edited\n"`), "got      upstream.response.received Upstream→Tool error UpstreamError"},
		{"the workspace host answered otherwise", "read-ok.jsonl",
			onLine(`"step":"host"`, `"ok":true`, `"ok":false`), "got      pipe.response.received Host→Pipe error MalformedEnvelope"},
		{"the policy no longer denies the tool", "policy-denied.jsonl",
			onLine(`"schema"`, `deny = [\"bm25_text_search\"]`, `deny = []`), "expected policy.decided Executor→Policy denied PolicyDenied"},
		{"a crossing the recording expects is another", "read-ok.jsonl",
			onLine(`"tools/call"`, `"kind":"tool.started"`, `"kind":"tool.begun"`), "expected tool.begun Executor→Tool ok"},
	}
	var text strings.Builder
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res := redriveFile(t, filepath.Join("..", "artifacts", "sessions", c.file), c.edit)
			if len(res.Drift) == 0 {
				t.Fatal("no drift")
			}
			if first := res.Drift[0].String(); !strings.Contains(first, c.want) {
				t.Errorf("the first drift is %q, want it to say %q", first, c.want)
			}
			text.WriteString("== " + c.name + " (" + c.file + ")\n")
			for _, d := range res.Drift {
				text.WriteString(d.String() + "\n")
			}
		})
	}
	golden.Check(t, "drift-cases.txt", text.String())
}
