package executor

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/policy"
	"github.com/tracebridge/tracebridge/projections"
)

// BenchmarkPolicyStep is the policy step of one call (grants, denials,
// then the rules) with 0, 10 and 100 rules on the arguments, each rule a
// realistic condition over a path, an owner and a size; p50 and p99 are
// of single decisions.
func BenchmarkPolicyStep(b *testing.B) {
	for _, n := range []int{0, 10, 100} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			var toml strings.Builder
			for i := range n {
				fmt.Fprintf(&toml, "[policy.rules.r%03d]\ntools = [\"fs__*\"]\nwhen = 'args.path.startsWith(\"/srv/%d/\") && args.owner == \"acme\" || args.size > %d'\neffect = %q\n",
					i, i, 1000+i, []string{"allow", "approve", "deny"}[i%3])
			}
			c, err := config.Parse("bench.toml", []byte("[policy]\ngrant = [\"upstream.fs\"]\n"+toml.String()))
			if err != nil {
				b.Fatal(err)
			}
			p := newPolicy(c, nil)
			d := &Descriptor{ID: "fs__write_file", Capabilities: []string{"upstream.fs"}}
			in := policy.Input{Tool: d.ID, Server: "fs", Annotations: projections.AnnotationFlags(`{"readOnlyHint":false}`),
				Args: map[string]any{"path": "/srv/app/docs/a.md", "owner": "acme", "size": 12.0, "content": strings.Repeat("x", 512)}, Time: time.Now()}
			ctx := context.Background()
			lat := make([]time.Duration, 0, 1<<16)
			for b.Loop() {
				t0 := time.Now()
				p.decide(ctx, d, func() policy.Input { return in })
				if len(lat) < cap(lat) {
					lat = append(lat, time.Since(t0))
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
