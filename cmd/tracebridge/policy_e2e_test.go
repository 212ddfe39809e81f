package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// policyConfig puts the npm filesystem and memory servers behind the
// bridge with rules on their real argument shapes: writes only under
// docs/, never a .env; a person entity needs approval; reading the memory
// graph needs none.
func policyConfig(root, fs, memory, rules string) string {
	return fmt.Sprintf(`
[approval]
mode = "deny"

[servers.fs]
command = "node"
args = [%q, %q]

[servers.memory]
command = "node"
args = [%q]
env = { MEMORY_FILE_PATH = %q }
%s`, fs, root, memory, filepath.Join(root, "memory.jsonl"), rules)
}

const policyRules = `
[policy.rules.writes-under-docs]
tools = ["fs__write_file", "fs__edit_file"]
when = '!args.path.contains("/docs/")'
effect = "deny"
message = "the AI writes under docs/ only"

[policy.rules.docs-writes-free]
tools = ["fs__write_file"]
when = 'args.path.contains("/docs/") && args.path.endsWith(".md")'
effect = "allow"

[policy.rules.no-env-files]
tools = ["fs__*"]
when = 'has(args.path) && args.path.endsWith(".env")'
effect = "deny"
message = "secrets live in .env files"

[policy.rules.people-are-reviewed]
tools = ["memory__create_entities"]
when = 'args.entities.exists(e, e.entityType == "person")'
effect = "approve"
message = "entities about people are looked at first"
`

// Rules decide calls of real third-party servers by their arguments
// (filesystem paths, memory entities), the decision names the rule and the
// policy version, `policy test` reports exactly the recorded calls a
// candidate policy decides otherwise, and `policy explain` shows which
// rules a call met.
func TestPolicyRulesOnRealServers(t *testing.T) {
	long(t)
	fsServer, memory := npmServer(t, "server-filesystem"), npmServer(t, "server-memory")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	os.WriteFile(filepath.Join(root, "app.env"), []byte("TOKEN=x\n"), 0o600)
	cfgPath := filepath.Join(t.TempDir(), "tracebridge.toml")
	os.WriteFile(cfgPath, []byte(policyConfig(root, fsServer, memory, policyRules)), 0o600)
	if out, err := exec.Command(tbBin, "config", "check", "--config", cfgPath).CombinedOutput(); err != nil {
		t.Fatalf("config check: %v\n%s", err, out)
	}
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18", "TRACEBRIDGE_CONFIG="+cfgPath)

	type call struct {
		tool string
		args map[string]any
		code events.Code
		rule string
	}
	calls := []call{
		{"fs__write_file", map[string]any{"path": filepath.Join(root, "docs", "a.md"), "content": "# a\n"}, "", "docs-writes-free"}, // approval waived
		{"fs__write_file", map[string]any{"path": filepath.Join(root, "src.go"), "content": "package x\n"}, "PolicyDenied", "writes-under-docs"},
		{"fs__write_file", map[string]any{"path": filepath.Join(root, "docs", "b.txt"), "content": "b"}, "ApprovalDenied", ""}, // no rule: the tool's approval ([approval] mode deny)
		{"fs__read_text_file", map[string]any{"path": filepath.Join(root, "app.env")}, "PolicyDenied", "no-env-files"},
		{"fs__read_text_file", map[string]any{"path": filepath.Join(root, "docs", "a.md")}, "", ""},
		{"memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "Ada", "entityType": "person", "observations": []string{"x"}}}}, "ApprovalDenied", "people-are-reviewed"},
		{"memory__create_entities", map[string]any{"entities": []map[string]any{{"name": "tracebridge", "entityType": "project", "observations": []string{"x"}}}}, "ApprovalDenied", ""},
	}
	reqs := make([]events.ID, len(calls))
	for i, c := range calls {
		_, req, code := b.call(t, c.tool, c.args)
		reqs[i] = req
		if code != c.code {
			t.Errorf("%s %v: code %q, want %q", c.tool, c.args, code, c.code)
		}
		for _, e := range requestEventsLive(t, b, req) {
			if e.Kind == events.KindPolicyDecided && (e.Attrs.Get(events.AttrRule) != c.rule || e.Attrs.Get(events.AttrPolicyVersion) == "") {
				t.Errorf("%s: policy.decided %v, want rule %q", c.tool, e.Attrs, c.rule)
			}
		}
	}
	if got, _ := os.ReadFile(filepath.Join(root, "docs", "a.md")); string(got) != "# a\n" {
		t.Fatalf("the allowed write did not happen: %q", got)
	}
	if _, err := os.Stat(filepath.Join(root, "src.go")); err == nil {
		t.Fatal("the denied write happened")
	}
	b.close(t)

	// A candidate that lets .env files be read and reviews every memory
	// entity: exactly the .env read (denied → allowed) and the project
	// entity (gated: still gated) … and nothing else changes.
	candidate := strings.Replace(policyRules, `when = 'has(args.path) && args.path.endsWith(".env")'`, `when = 'false'`, 1) +
		"\n[policy.rules.all-writes-reviewed]\ntools = [\"fs__write_file\"]\nwhen = 'args.content.size() > 2'\neffect = \"approve\"\n"
	candPath := filepath.Join(t.TempDir(), "candidate.toml")
	os.WriteFile(candPath, []byte(policyConfig(root, fsServer, memory, candidate)), 0o600)
	out, err := exec.Command(tbBin, "--data", data, "policy", "test", "--config", candPath, "--format", "json").Output()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("policy test: %v (want exit 1: calls change)\n%s", err, out)
	}
	var rep struct {
		Calls   int
		Changed []struct {
			RequestID events.ID
			Was       struct{ Verdict string }
			Would     struct{ Verdict, Rule string }
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	var got []string
	for _, c := range rep.Changed {
		got = append(got, fmt.Sprintf("%d %s→%s %s", slices.Index(reqs, c.RequestID), c.Was.Verdict, c.Would.Verdict, c.Would.Rule))
	}
	want := []string{"0 allowed→gated all-writes-reviewed", "3 denied→allowed "}
	if rep.Calls != len(calls) || !slices.Equal(got, want) {
		t.Fatalf("policy test: %d calls, changes %q, want %q\n%s", rep.Calls, got, want, out)
	}
	if out, err := exec.Command(tbBin, "--data", data, "policy", "test", "--config", cfgPath).CombinedOutput(); err != nil || !strings.Contains(string(out), "0 would change") {
		t.Fatalf("the policy in force changes nothing: %v\n%s", err, out)
	}

	// config check reads the pinned tools' input schemas from the log: a
	// rule on a field memory__create_entities lacks is refused, with its line.
	typo := filepath.Join(t.TempDir(), "typo.toml")
	os.WriteFile(typo, []byte(policyConfig(root, fsServer, memory, strings.Replace(policyRules, "args.entities.exists", "args.entitys.exists", 1))), 0o600)
	if out, err := exec.Command(tbBin, "--data", data, "config", "check", "--config", typo).CombinedOutput(); err == nil ||
		!regexpLine(string(out), `typo.toml:\d+: policy.rules.people-are-reviewed.when: args.entitys: no tool the rule applies to has it in its input schema: memory__create_entities \(its input schema has entities\)`) {
		t.Fatalf("config check of a rule on a field the schema lacks: %v\n%s", err, out)
	}

	out, err = exec.Command(tbBin, "--data", data, "policy", "explain", reqs[5].String(), "--config", cfgPath).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "then (policy version") || !regexpLine(string(out), `people-are-reviewed\s+approve\s+true\s+true`) ||
		!regexpLine(string(out), `writes-under-docs\s+deny\s+false\s+-`) {
		t.Fatalf("policy explain: %v\n%s", err, out)
	}

	// Archived calls are re-decided too, with --archive: the same changes.
	head, err := exec.Command(tbBin, "--data", data, "runs", "--kind", "all", "--format", "json", "-n", "1").Output()
	if err != nil {
		t.Fatal(err)
	}
	var last struct{ LastSeq uint64 }
	json.Unmarshal([]byte(strings.SplitN(string(head), "\n", 2)[0]), &last)
	if out, err := exec.Command(tbBin, "--data", data, "archive", "--before", fmt.Sprint(last.LastSeq+1)).CombinedOutput(); err != nil {
		t.Fatalf("archive: %v\n%s", err, out)
	}
	out, _ = exec.Command(tbBin, "--data", data, "policy", "test", "--config", candPath, "--format", "json").Output()
	var hot struct{ Calls int }
	json.Unmarshal(out, &hot)
	out, _ = exec.Command(tbBin, "--data", data, "policy", "test", "--config", candPath, "--format", "json", "--archive", filepath.Join(data, "archive")).Output()
	var archived struct {
		Calls   int
		Changed []struct{ RequestID events.ID }
	}
	if err := json.Unmarshal(out, &archived); err != nil || hot.Calls != 0 || archived.Calls != len(calls) || len(archived.Changed) != 2 ||
		archived.Changed[0].RequestID != reqs[0] || archived.Changed[1].RequestID != reqs[3] {
		t.Fatalf("after archiving: %d calls in the hot log, %d with the archive, changes %+v\n%s", hot.Calls, archived.Calls, archived.Changed, out)
	}
}

// regexpLine reports whether a line of out matches pattern.
func regexpLine(out, pattern string) bool {
	re := regexp.MustCompile(pattern)
	for _, l := range strings.Split(out, "\n") {
		if re.MatchString(l) {
			return true
		}
	}
	return false
}
