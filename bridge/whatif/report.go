package whatif

import (
	"context"
	"crypto/ed25519"
	"encoding/json"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// Change is a recorded call the candidate policy decides otherwise.
type Change struct {
	RequestID events.ID           `json:"requestId"`
	Time      time.Time           `json:"time"`
	Tool      string              `json:"tool"`
	Was       executor.Evaluation `json:"was"`
	Would     executor.Evaluation `json:"would"`
}

// Group is the group c counts in: the rule that decides it now, else the
// one that did, else NoRule.
func (c *Change) Group() Group {
	rule := c.Would.Rule
	if rule == "" {
		rule = c.Was.Rule
	}
	if rule == "" {
		rule = NoRule
	}
	return Group{Rule: rule, From: c.Was.Verdict, To: c.Would.Verdict}
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
	Calls int `json:"calls"`
	// Unreadable counts calls left out: their envelope could not be read
	// back (a payload an archive no longer holds).
	Unreadable int       `json:"unreadable,omitempty"`
	Version    string    `json:"version"` // the candidate's policy version
	Changed    []*Change `json:"changed"`
	Groups     []Group   `json:"groups"`
	// Results are the recorded upstream results the candidate's guard (its
	// pack's actions, its rules with phase "result") judges otherwise.
	Results   []*ResultChange `json:"results"`
	ElapsedMs float64         `json:"elapsedMs"`
}

// Options are what Test reads besides the log and the candidate.
type Options struct {
	Since       time.Time         // only calls since (zero: all)
	Annotations map[string]string // tool id → MCP annotations (JSON): Annotations
	// Schemas are upstream tools' input schemas by id (Schemas), for the
	// guard's undeclared-property rule.
	Schemas map[string]json.RawMessage
	// Archive is a directory of archived segments (`tracebridge archive`)
	// read before the log, verified against Trusted (the data dir's key).
	Archive string
	Trusted ed25519.PublicKey
	Now     func() time.Time
}

// Test re-decides every call recorded in log (and its archive) under cfg
// and reports those whose verdict changes, grouped by the rule that changed
// them.
func Test(ctx context.Context, log Log, cfg *config.Config, opts Options) (*Report, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	t0 := opts.Now()
	r := &Report{Version: cfg.PolicyVersion(), Changed: []*Change{}, Groups: []Group{}, Results: []*ResultChange{}}
	counts := map[Group]int{}
	x := executor.NewEvaluator(cfg)
	x.Schemas = opts.Schemas
	// The calls are decided on every core while the log is read: each
	// change keeps its place in the log's order (n).
	type job struct {
		n int
		c Call
	}
	type result struct {
		n      int
		change *Change
		judged *ResultChange
	}
	rj := newResultJudge(cfg)
	jobs, results := make(chan job, 256), make(chan result, 256)
	var workers sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		workers.Go(func() {
			for j := range jobs {
				would := x.Evaluate(ctx, j.c.Descriptor, j.c.Input)
				var ch *Change
				if would.Verdict != j.c.Was.Verdict {
					ch = &Change{RequestID: j.c.RequestID, Time: j.c.Time, Tool: j.c.Descriptor.ID, Was: j.c.Was, Would: would}
				}
				results <- result{j.n, ch, rj.judge(ctx, j.c)}
			}
		})
	}
	var changed []result
	collected := make(chan struct{})
	go func() {
		defer close(collected)
		for res := range results {
			if res.change != nil || res.judged != nil {
				changed = append(changed, res)
			}
		}
	}()
	s := newScan(log, opts.Since, opts.Annotations, func(c Call) error {
		jobs <- job{r.Calls, c}
		r.Calls++
		return nil
	})
	var err error
	if opts.Archive != "" {
		err = store.ArchivedEvents(opts.Archive, opts.Trusted, func(e events.Event) error { return s.step(ctx, &e) })
	}
	if err == nil {
		err = s.log(ctx, log)
	}
	if err == nil {
		err = s.end()
	}
	close(jobs)
	workers.Wait()
	close(results)
	<-collected
	sort.Slice(changed, func(i, j int) bool { return changed[i].n < changed[j].n })
	for _, res := range changed {
		if res.judged != nil {
			r.Results = append(r.Results, res.judged)
		}
		if c := res.change; c != nil {
			r.Changed = append(r.Changed, c)
			counts[c.Group()]++
		}
	}
	r.Unreadable = s.Unreadable
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
	r.ElapsedMs = events.Ms(opts.Now().Sub(t0))
	return r, nil
}
