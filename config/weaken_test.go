package config

import (
	"slices"
	"strings"
	"testing"
)

func mustParse(t *testing.T, text string) *Config {
	t.Helper()
	c, err := Parse("t.toml", []byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	return c
}

// Each loosening is named; each tightening twin is not.
func TestWeakenedNamesWhatLoosened(t *testing.T) {
	base := `[approval]
mode = "prompt"
[policy]
deny = ["shell"]
[policy.rules.no-prod]
tools = ["gh__*"]
when = 'args.repo == "prod"'
effect = "deny"
[servers.gh]
url = "https://example.com/mcp"
guard = { "result-injection" = "block" }
`
	for _, c := range []struct{ name, next, want string }{
		{"mode", strings.Replace(base, `"prompt"`, `"allow"`, 1), "[approval] mode prompt → allow"},
		{"deny", strings.Replace(base, `deny = ["shell"]`, `deny = []`, 1), `[policy] deny no longer lists "shell"`},
		{"grant", strings.Replace(base, `deny = ["shell"]`, "deny = [\"shell\"]\ngrant = [\"workspace.read\", \"exec.shell\"]", 1), `[policy] grant adds "exec.shell"`},
		{"rule removed", base[:strings.Index(base, "[policy.rules")] + base[strings.Index(base, "[servers"):], "[policy.rules.no-prod] removed (effect was deny)"},
		{"rule softened", strings.Replace(base, `effect = "deny"`, `effect = "approve"`, 1), "[policy.rules.no-prod] effect deny → approve"},
		{"guard off", base + "[guard]\noff = [\"credential-path\"]\n", "[guard] rule credential-path: block → off"},
		{"server guard", strings.Replace(base, `"block"`, `"flag"`, 1), "[servers.gh] guard rule result-injection: block → flag"},
		{"first sight", base + "[gateway]\nfirst_sight = \"trust\"\n", "[gateway] first_sight inspect → trust"},
		{"server added", base + "[servers.more]\nurl = \"https://example.org/mcp\"\n", "[servers.more] added (its tools are granted)"},
	} {
		got := Weakened(mustParse(t, base), mustParse(t, c.next))
		if !slices.Contains(got, c.want) {
			t.Errorf("%s: %q, want it to name %q", c.name, got, c.want)
		}
	}
	// The twins: the same file, and stricter ones.
	for _, next := range []string{base, strings.Replace(base, `"prompt"`, `"deny"`, 1), base + "[guard]\nactions = { \"result-injection\" = \"block\" }\n",
		strings.Replace(base, `deny = ["shell"]`, `deny = ["shell", "rm"]`, 1), base + "[gateway]\nfirst_sight = \"review\"\n"} {
		if got := Weakened(mustParse(t, base), mustParse(t, next)); len(got) != 0 {
			t.Errorf("a reload as strict or stricter was called weaker: %q\n%s", got, next)
		}
	}
}
