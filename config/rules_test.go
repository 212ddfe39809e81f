package config

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func mustRules(t testing.TB, toml string) *RuleSet {
	t.Helper()
	c, err := Parse("tracebridge.toml", []byte(toml))
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
		v := rs.Decide(context.Background(), RuleInput{Tool: tc.tool, Args: map[string]any{"path": tc.path},
			Annotations: map[string]bool{"readOnlyHint": tc.readOnly}, Time: tc.at})
		if got := v.Effect + "/" + v.Rule + " " + strings.Join(v.Matched, ","); got != tc.want || v.Failed != "" {
			t.Errorf("%s %s: %s (%s), want %s", tc.tool, tc.path, got, v.Error, tc.want)
		}
	}
}

// The policy version changes with what decides calls, and only with it.
func TestPolicyVersion(t *testing.T) {
	v := func(toml string) string {
		c, err := Parse("t", []byte(toml))
		if err != nil {
			t.Fatal(err)
		}
		return c.PolicyVersion()
	}
	base := v("[policy]\ngrant = [\"text.search\"]\n")
	if base != v("[policy]\ngrant = [\"text.search\"]\n[otlp]\nendpoint = \"http://127.0.0.1:4318\"\n") {
		t.Error("an [otlp] change changed the policy version")
	}
	for _, other := range []string{"[policy]\ngrant = [\"trace.read\"]\n", "[approval]\nmode = \"deny\"\n",
		"[policy.rules.x]\nwhen = \"true\"\neffect = \"deny\"\n", "[tools.echo]\napproval = \"never\"\n"} {
		if v(other) == base {
			t.Errorf("%q has the same policy version", other)
		}
	}
}

// Rules are compiled at load: a broken expression, one that is not true
// or false, an unknown effect are problems with the rule's line.
func TestRuleProblemsNameTheLine(t *testing.T) {
	_, err := Parse("t.toml", []byte("[policy.rules.r]\nwhen = 'args.path +'\neffect = \"deny\"\n[policy.rules.s]\nwhen = '\"x\"'\neffect = \"maybe\"\n"))
	for _, want := range []string{"t.toml:2: policy.rules.r.when: when: ERROR", "t.toml:5: policy.rules.s.when: when is a string, not true or false", "t.toml:6: policy.rules.s.effect: effect \"maybe\""} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q in %v", want, err)
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
		v := rs.Decide(context.Background(), RuleInput{Tool: "db__query", Args: args})
		if v.Failed != "" && v.Effect != EffectDeny {
			t.Fatalf("a rule that failed did not deny: %+v", v)
		}
	})
}

// A rule naming a field its tools' input schemas lack is a problem on its
// when line; a field of an object without listed properties, and tools
// whose schema is unknown, are not checked.
func TestRuleFieldsAgainstSchemas(t *testing.T) {
	c, err := Parse("t.toml", []byte(`
[policy.rules.ok]
tools = ["fs__write_file"]
when = 'args.path.startsWith("docs/") && args["content"].size() < 10 && args.meta.anything == 1'
effect = "deny"

[policy.rules.typo]
tools = ["fs__*"]
when = 'args.pth.startsWith("docs/")'
effect = "deny"

[policy.rules.nested]
tools = ["fs__write_file"]
when = 'args.options.dryrun'
effect = "allow"

[policy.rules.unknown-tool]
tools = ["other__*"]
when = 'args.whatever'
effect = "allow"
`))
	if err != nil {
		t.Fatal(err)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"},"meta":{"type":"object"},
		"options":{"type":"object","properties":{"dryRun":{"type":"boolean"}}}}}`)
	got := c.ruleFields("t.toml", map[string]json.RawMessage{"fs__write_file": schema, "fs__read_file": json.RawMessage(`{"type":"object","properties":{"path":{}}}`)})
	want := []string{
		"t.toml:14: policy.rules.nested.when: args.options.dryrun: no tool the rule applies to has it in its input schema: fs__write_file (its property options has dryRun)",
		"t.toml:9: policy.rules.typo.when: args.pth: no tool the rule applies to has it in its input schema: fs__read_file (its input schema has path); fs__write_file (its input schema has content, meta, options, path)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A rule sees who called: the transport (stdio, or http through the front
// door) and the user id.
func TestRulesSeeTheCaller(t *testing.T) {
	rs := mustRules(t, "[policy.rules.no-writes-over-http]\ntools = [\"fs__write_*\"]\nwhen = 'caller.transport == \"http\" && caller.uid >= 0'\neffect = \"deny\"\n")
	for transport, want := range map[string]string{"tcp": EffectDeny, "pipe": ""} {
		if v := rs.Decide(context.Background(), RuleInput{Tool: "fs__write_file", Caller: CallerOf(transport)}); v.Effect != want || v.Failed != "" {
			t.Errorf("over %s: %+v, want %q", transport, v, want)
		}
	}
}
