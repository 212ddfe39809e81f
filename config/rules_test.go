package config

import (
	"encoding/json"
	"strings"
	"testing"
)

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
