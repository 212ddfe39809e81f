package whatif

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// A synthetic call: one of a few tools (a writer that needs approval, a
// reader that does not), with varied arguments.
type synthCall struct {
	tool  string
	path  string
	size  int
	owner string
}

var (
	synthTools    = []string{"fs__write_file", "fs__read_file", "gh__create_issue", "db__query"}
	synthPrefixes = []string{"docs/", "src/", "/etc/", "docs/secret/", "tmp/"}
	synthOwners   = []string{"acme", "evil", "acme-labs"}
)

func randomCall(r *rand.Rand) synthCall {
	return synthCall{tool: synthTools[r.IntN(len(synthTools))], path: synthPrefixes[r.IntN(len(synthPrefixes))] + fmt.Sprint(r.IntN(50)),
		size: r.IntN(2000), owner: synthOwners[r.IntN(len(synthOwners))]}
}

func (c synthCall) args() map[string]any {
	return map[string]any{"path": c.path, "size": c.size, "owner": c.owner}
}

// needsApproval is a tool's own requirement (no rule).
func needsApproval(tool string) bool { return tool != "fs__read_file" && tool != "db__query" }

// synthRule is a rule of a small grammar the oracle evaluates by hand.
type synthRule struct {
	name, effect, tools string
	field               string // path | size | owner
	prefix              string
	limit               int
}

func (r synthRule) cel() string {
	switch r.field {
	case "path":
		return fmt.Sprintf("args.path.startsWith(%q)", r.prefix)
	case "size":
		return fmt.Sprintf("args.size > %d", r.limit)
	}
	return fmt.Sprintf("args.owner == %q", r.prefix)
}

// matches is the oracle's reading of the rule.
func (r synthRule) matches(c synthCall) bool {
	if ok, _ := path.Match(r.tools, c.tool); !ok {
		return false
	}
	switch r.field {
	case "path":
		return strings.HasPrefix(c.path, r.prefix)
	case "size":
		return c.size > r.limit
	}
	return c.owner == r.prefix
}

func randomPolicy(r *rand.Rand, n int) []synthRule {
	var rules []synthRule
	for i := range n {
		sr := synthRule{name: fmt.Sprintf("r%02d", i), effect: []string{"allow", "approve", "deny"}[r.IntN(3)],
			tools: []string{"*", "fs__*", "fs__write_file", "gh__create_issue", "db__query"}[r.IntN(5)], field: []string{"path", "size", "owner"}[r.IntN(3)]}
		switch sr.field {
		case "path":
			sr.prefix = synthPrefixes[r.IntN(len(synthPrefixes))]
		case "size":
			sr.limit = r.IntN(2000)
		default:
			sr.prefix = synthOwners[r.IntN(len(synthOwners))]
		}
		rules = append(rules, sr)
	}
	return rules
}

func (p policyUnderTest) toml() string {
	var b strings.Builder
	b.WriteString("[approval]\nmode = \"prompt\"\n[policy]\ngrant = [\"upstream.x\"]\n")
	for _, r := range p {
		fmt.Fprintf(&b, "[policy.rules.%s]\ntools = [%q]\nwhen = '%s'\neffect = %q\n", r.name, r.tools, r.cel(), r.effect)
	}
	return b.String()
}

type policyUnderTest []synthRule

// verdict is the oracle: deny wins over approve, approve over allow; no
// rule: the tool's own requirement.
func (p policyUnderTest) verdict(c synthCall) string {
	effect := ""
	rank := map[string]int{"": 0, "allow": 1, "approve": 2, "deny": 3}
	for _, r := range p {
		if r.matches(c) && rank[r.effect] > rank[effect] {
			effect = r.effect
		}
	}
	switch {
	case effect == "deny":
		return executor.VerdictDenied
	case effect == "approve", effect == "" && needsApproval(c.tool):
		return executor.VerdictGated
	}
	return executor.VerdictAllowed
}

// record appends c as the bridge records a tool call it decided as was:
// executor.started, the audit envelope, the response with its params.
func record(em *events.Emitter, c synthCall, was string, at time.Time) events.ID {
	req := em.NewID()
	approval := "never"
	if needsApproval(c.tool) {
		approval = "always"
	}
	d := executor.Descriptor{ID: c.tool, Name: c.tool[strings.Index(c.tool, "__")+2:], Source: "upstream:x", Capabilities: []string{"upstream.x"},
		SideEffects: needsApproval(c.tool), Approval: approval}
	env := map[string]any{"tool": c.tool, "descriptor": d, "policy": map[string]any{"allowed": was != executor.VerdictDenied, "reason": "recorded"},
		"approval": map[string]any{"required": was == executor.VerdictGated}, "outcome": "ok"}
	envJSON, _ := json.Marshal(env)
	params, _ := json.Marshal(map[string]any{"name": c.tool, "arguments": c.args()})
	em.Emit(events.Event{Kind: events.KindExecutorStarted, RequestID: req, Time: at, Outcome: events.OK, Attrs: events.A(events.AttrClient, "synth/1")})
	em.Emit(events.Event{Kind: events.KindExecutorAudit, RequestID: req, Time: at, Outcome: events.OK, Attrs: events.A(events.AttrTool, c.tool, events.AttrEnvelope, string(envJSON))})
	em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Time: at, Outcome: events.OK, Attrs: events.A(events.AttrParams, string(params))})
	return req
}

// policy test reports exactly the recorded calls a hand-written oracle
// says a candidate policy decides otherwise, over random policies and
// calls with varied arguments (100k calls; 10k with -short).
func TestPolicyTestAgreesWithTheOracle(t *testing.T) {
	n := 100_000
	if testing.Short() {
		n = 10_000
	}
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Name: "whatif-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node})
	r := rand.New(rand.NewPCG(7, 30))
	before := policyUnderTest(randomPolicy(r, 6))
	calls := make([]synthCall, n)
	reqs := make(map[events.ID]int, n)
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range calls {
		calls[i] = randomCall(r)
		reqs[record(em, calls[i], before.verdict(calls[i]), t0.Add(time.Duration(i)*time.Second))] = i
	}
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		after := policyUnderTest(randomPolicy(r, 1+r.IntN(12)))
		cfg, err := config.Parse("candidate.toml", []byte(after.toml()))
		if err != nil {
			t.Fatalf("%v\n%s", err, after.toml())
		}
		rep, err := Test(ctx, node, cfg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		var want []int
		for i, c := range calls {
			if before.verdict(c) != after.verdict(c) {
				want = append(want, i)
			}
		}
		var got []int
		for _, ch := range rep.Changed {
			i := reqs[ch.RequestID]
			got = append(got, i)
			if ch.Was.Verdict != before.verdict(calls[i]) || ch.Would.Verdict != after.verdict(calls[i]) {
				t.Fatalf("round %d: call %d %+v: %s → %s, the oracle says %s → %s", round, i, calls[i], ch.Was.Verdict, ch.Would.Verdict, before.verdict(calls[i]), after.verdict(calls[i]))
			}
		}
		slices.Sort(got)
		if rep.Calls != n || !slices.Equal(got, want) {
			t.Fatalf("round %d: %d calls, %d changed; the oracle says %d of %d\n%s", round, rep.Calls, len(got), len(want), n, after.toml())
		}
		t.Logf("round %d: %d rules, %d of %d calls change, %.0f calls/s", round, len(after), len(got), n, float64(n)/(rep.ElapsedMs/1000))
	}
}

// BenchmarkPolicyTest re-decides 100k recorded calls (300k events in a
// real hub's log) under a 10-rule candidate: calls/s is policy test's
// throughput, the log's reading included.
func BenchmarkPolicyTest(b *testing.B) {
	ctx := context.Background()
	node := hubtest.Open(b, hub.Options{Dir: hub.DataDir(filepath.Join(b.TempDir(), "data")), Role: hub.Elect, Name: "whatif-bench"})
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node})
	r := rand.New(rand.NewPCG(1, 2))
	const n = 100_000
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		record(em, randomCall(r), executor.VerdictAllowed, t0.Add(time.Duration(i)*time.Second))
	}
	if err := em.FlushAll(ctx); err != nil {
		b.Fatal(err)
	}
	cfg, err := config.Parse("candidate.toml", []byte(policyUnderTest(randomPolicy(r, 10)).toml()))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Test(ctx, node, cfg, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "calls/s")
}
