package executor

import (
	"testing"

	"github.com/tracebridge/tracebridge/config"
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
