package policy_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/policy"
)

func mustRules(t testing.TB, toml string) *policy.RuleSet {
	t.Helper()
	c, err := config.Parse("tracebridge.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	rs, err := c.Rules()
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

// The rules' verdict: deny wins over approve and approve over allow,
// whatever their order; a rule applies only to its tools; every rule that
// matched is named.
func TestRulesVerdict(t *testing.T) {
	rs := mustRules(t, `
[policy.rules.a-allow-reads]
when = 'annotations.readOnlyHint'
effect = "allow"
[policy.rules.b-gate-writes-outside-docs]
tools = ["fs__write_*"]
when = '!args.path.startsWith("docs/")'
effect = "approve"
message = "writes outside docs/ are looked at"
[policy.rules.c-no-env]
tools = ["fs__*"]
when = 'args.path.endsWith(".env")'
effect = "deny"
[policy.rules.d-night]
tools = ["fs__write_file"]
when = 'now.getHours("UTC") < 6'
effect = "deny"
message = "no writes at night"
`)
	noon := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		tool, path string
		readOnly   bool
		at         time.Time
		want       string // effect/rule, matched
	}{
		{"fs__read_file", "x.env", true, noon, "deny/c-no-env a-allow-reads,c-no-env"},
		{"fs__read_file", "a.txt", true, noon, "allow/a-allow-reads a-allow-reads"},
		{"fs__write_file", "src/a.go", false, noon, "approve/b-gate-writes-outside-docs b-gate-writes-outside-docs"},
		{"fs__write_file", "docs/a.md", false, noon, "/ "},
		{"fs__write_file", "docs/a.md", false, noon.Add(-8 * time.Hour), "deny/d-night d-night"},
		{"other__write_x", "src/a.go", false, noon, "/ "},
	} {
		v := rs.Decide(context.Background(), policy.Input{Tool: tc.tool, Args: map[string]any{"path": tc.path},
			Annotations: map[string]bool{"readOnlyHint": tc.readOnly}, Time: tc.at})
		if got := v.Effect + "/" + v.Rule + " " + strings.Join(v.Matched, ","); got != tc.want || v.Failed != "" {
			t.Errorf("%s %s: %s (%s), want %s", tc.tool, tc.path, got, v.Error, tc.want)
		}
	}
}

// Hostile arguments (deep nesting, huge strings, invalid UTF-8, numbers
// where strings are expected) never crash a rule; what it cannot evaluate
// denies.
func FuzzRules(f *testing.F) {
	rs := mustRules(f, `
[policy.rules.path]
when = 'has(args.path) && args.path.startsWith("docs/") && !args.path.contains("..")'
effect = "allow"
[policy.rules.sql]
when = 'args.query.lowerAscii().matches("\\bdrop\\b")'
effect = "deny"
[policy.rules.deep]
when = 'args.all(k, k.size() < 64)'
effect = "approve"
`)
	f.Add([]byte(`{"path":"docs/a.md","query":"select 1"}`))
	f.Add([]byte(`{"query":"DROP TABLE x"}`))
	f.Add([]byte(`{"path":"` + strings.Repeat("docs/../", 1000) + `","query":"\xff\xfe"}`))
	f.Add([]byte(strings.Repeat(`{"a":`, 500) + "1" + strings.Repeat("}", 500)))
	f.Add([]byte(`{"path":12,"query":["drop"]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var args map[string]any
		if json.Unmarshal(b, &args) != nil {
			return
		}
		v := rs.Decide(context.Background(), policy.Input{Tool: "db__query", Args: args})
		if v.Failed != "" && v.Effect != policy.EffectDeny {
			t.Fatalf("a rule that failed did not deny: %+v", v)
		}
	})
}

// A rule sees who called: the transport (stdio, or http through the front
// door) and the user id.
func TestRulesSeeTheCaller(t *testing.T) {
	rs := mustRules(t, "[policy.rules.no-writes-over-http]\ntools = [\"fs__write_*\"]\nwhen = 'caller.transport == \"http\" && caller.uid >= 0'\neffect = \"deny\"\n")
	for transport, want := range map[string]string{"tcp": policy.EffectDeny, "pipe": ""} {
		if v := rs.Decide(context.Background(), policy.Input{Tool: "fs__write_file", Caller: policy.CallerOf(transport)}); v.Effect != want || v.Failed != "" {
			t.Errorf("over %s: %+v, want %q", transport, v, want)
		}
	}
}
