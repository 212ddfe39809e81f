package executor

import (
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/policy"
)

// G15: policy.deny takes patterns as [servers.*] deny does, so a glob
// denies what it names; G14: a server's custom capability grants nothing —
// configuring a server grants only upstream.NAME.
func TestPolicyDenyPatternsAndServerGrants(t *testing.T) {
	c, err := config.Parse("tb.toml", []byte(`
[policy]
grant = ["text.search"]
deny = ["gh__delete_*", "bm25_text_search"]
[servers.gh]
command = "x"
[servers.metrics]
command = "x"
capability = "metrics.read"
`))
	if err != nil {
		t.Fatal(err)
	}
	p := newPolicy(c, nil)
	for _, tc := range []struct {
		id   string
		caps []string
		ok   bool
	}{
		{"gh__delete_repo", []string{"upstream.gh"}, false},
		{"gh__create_issue", []string{"upstream.gh"}, true},
		{"bm25_text_search", []string{"text.search"}, false},
		{"regex_text_search", []string{"text.search"}, true},
		{"metrics__query", []string{"metrics.read"}, false}, // a requirement, not a grant
		{"hello", []string{config.CapProcessRun}, false},
	} {
		if d := p.decideTool(&Descriptor{ID: tc.id, Capabilities: tc.caps}); d.Allowed != tc.ok {
			t.Errorf("%s: allowed %v (%s), want %v", tc.id, d.Allowed, d.Reason, tc.ok)
		}
	}
}

// F-P1: with prefix = false a server's tools are listed under their own
// names, and policy still names each by server__tool: a deny pattern and a
// rule written for gh__* apply to delete_repo as listed; the harmless twin
// (another server's tool of the same shape, the same server's other tool)
// passes.
func TestPolicyNamesAToolWhateverItsListingName(t *testing.T) {
	c, err := config.Parse("tb.toml", []byte(`
[policy]
deny = ["gh__delete_*"]
[policy.rules.no-prod]
tools = ["gh__*"]
when = 'has(args.repo) && args.repo == "prod"'
effect = "deny"
[servers.gh]
command = "x"
prefix = false
[servers.other]
command = "x"
prefix = false
`))
	if err != nil {
		t.Fatal(err)
	}
	p := newPolicy(c, nil)
	decide := func(server, name string, args map[string]any) decision {
		d := &Descriptor{ID: name, Name: name, Source: "upstream:" + server, Capabilities: []string{"upstream." + server}}
		return p.decide(t.Context(), d, func() policy.Input {
			return policy.Input{Tool: d.ID, Server: d.Server(), Qualified: d.Qualified(), Args: args}
		})
	}
	if d := decide("gh", "delete_repo", nil); d.Allowed || !strings.Contains(d.Reason, "gh__delete_*") {
		t.Fatalf("gh's delete_repo listed as delete_repo: %+v", d)
	}
	if d := decide("gh", "create_issue", map[string]any{"repo": "prod"}); d.Allowed || d.Rule != "no-prod" {
		t.Fatalf("rule no-prod on gh's create_issue: %+v", d)
	}
	for _, twin := range []struct{ server, name string }{{"other", "delete_repo"}, {"gh", "create_issue"}} {
		if d := decide(twin.server, twin.name, map[string]any{"repo": "dev"}); !d.Allowed {
			t.Fatalf("%s's %s: %+v", twin.server, twin.name, d)
		}
	}
}
