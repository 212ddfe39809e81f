package whatif

import (
	"context"
	"sort"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

// Change is a recorded call the candidate policy decides otherwise.
type Change struct {
	RequestID events.ID           `json:"requestId"`
	Time      time.Time           `json:"time"`
	Tool      string              `json:"tool"`
	Was       executor.Evaluation `json:"was"`
	Would     executor.Evaluation `json:"would"`
}

// Group counts the changes of one kind (allowed → denied…) one rule made.
type Group struct {
	Rule  string `json:"rule"` // the candidate's deciding rule, else the recorded one, else NoRule
	From  string `json:"from"`
	To    string `json:"to"`
	Calls int    `json:"calls"`
}

// NoRule names the changes no rule made: grants, denials, approval
// settings.
const NoRule = "(no rule: grants, deny, approval settings)"

// Report is what a candidate policy would have done to the recorded calls.
type Report struct {
	Calls     int       `json:"calls"`
	Version   string    `json:"version"` // the candidate's policy version
	Changed   []*Change `json:"changed"`
	Groups    []Group   `json:"groups"`
	ElapsedMs float64   `json:"elapsedMs"`
}

// Test re-decides every call recorded in log since since under cfg and
// reports those whose verdict changes, grouped by the rule that changed
// them.
func Test(ctx context.Context, log Log, cfg *config.Config, since time.Time, annotations map[string]string, now func() time.Time) (*Report, error) {
	t0 := now()
	r := &Report{Version: cfg.PolicyVersion(), Changed: []*Change{}, Groups: []Group{}}
	counts := map[Group]int{}
	x := executor.NewEvaluator(cfg)
	err := Calls(ctx, log, since, annotations, func(c Call) error {
		r.Calls++
		would := x.Evaluate(ctx, c.Descriptor, c.Input)
		if would.Verdict == c.Was.Verdict {
			return nil
		}
		r.Changed = append(r.Changed, &Change{RequestID: c.RequestID, Time: c.Time, Tool: c.Descriptor.ID, Was: c.Was, Would: would})
		rule := would.Rule
		if rule == "" {
			rule = c.Was.Rule
		}
		if rule == "" {
			rule = NoRule
		}
		counts[Group{Rule: rule, From: c.Was.Verdict, To: would.Verdict}]++
		return nil
	})
	if err != nil {
		return nil, err
	}
	for g, n := range counts {
		g.Calls = n
		r.Groups = append(r.Groups, g)
	}
	sort.Slice(r.Groups, func(i, j int) bool {
		a, b := r.Groups[i], r.Groups[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		if a.Rule != b.Rule {
			return a.Rule < b.Rule
		}
		return a.From+a.To < b.From+b.To
	})
	r.ElapsedMs = events.Ms(now().Sub(t0))
	return r, nil
}
