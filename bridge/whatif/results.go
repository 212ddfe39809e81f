package whatif

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// ResultChange is a recorded upstream result the candidate judges
// otherwise: the guard's action on it then and now (block, redact, flag,
// or "" for none), and the rule that decides now.
type ResultChange struct {
	RequestID events.ID `json:"requestId"`
	Tool      string    `json:"tool"`
	Was       string    `json:"was"`
	Would     string    `json:"would"`
	Rule      string    `json:"rule,omitempty"`
	Why       string    `json:"why,omitempty"`
}

// resultJudge judges recorded results under a candidate configuration:
// the guard's pack with its actions, then its rules with phase "result".
type resultJudge struct {
	cfg   *config.Config
	rules *policy.RuleSet
	red   *events.Redactor // knows no secret: recorded answers hold markers
}

func newResultJudge(cfg *config.Config) *resultJudge {
	rs, _ := cfg.Rules()
	if !rs.HasPhase(policy.PhaseResult) {
		rs = nil
	}
	return &resultJudge{cfg: cfg, rules: rs, red: events.NewRedactor(make([]byte, 32))}
}

// judge is the change c's recorded result (answer: the upstream's answer as
// the log kept it, redacted) would see under the candidate; nil when the
// candidate judges it as it was judged.
func (j *resultJudge) judge(ctx context.Context, c Call) *ResultChange {
	server := c.Descriptor.Server()
	if c.Answer == "" || server == "" {
		return nil
	}
	var res sdk.CallToolResult
	if json.Unmarshal([]byte(c.Answer), &res) != nil {
		return nil
	}
	act := func(rule string) string { return j.cfg.GuardAction(server, rule) }
	var more guard.More
	if j.rules != nil {
		more = func(shown *sdk.CallToolResult) []guard.Finding {
			v := j.rules.Decide(ctx, policy.NewResultInput(c.Input, guard.Text(shown), shown.StructuredContent, shown.IsError))
			switch {
			case v.Failed != "":
				return []guard.Finding{{Rule: "policy:" + v.Failed, Action: policy.ActionBlock, Why: v.Message}}
			case v.Effect == policy.EffectDeny:
				return []guard.Finding{{Rule: "policy:" + v.Rule, Action: policy.ActionBlock, Why: "rule " + v.Rule + " blocks it"}}
			case v.Effect == policy.EffectFlag:
				return []guard.Finding{{Rule: "policy:" + v.Rule, Action: policy.ActionFlag, Why: "rule " + v.Rule + " flags it"}}
			}
			return nil
		}
	}
	judged := guard.Result(server, &res, j.red, act, more)
	would := guard.Worst(judged.Findings)
	if would == c.ResultWas {
		return nil
	}
	ch := &ResultChange{RequestID: c.RequestID, Tool: c.Descriptor.ID, Was: c.ResultWas, Would: would}
	for _, f := range judged.Findings {
		if f.Action == would {
			ch.Rule, ch.Why = f.Rule, f.Why
			break
		}
	}
	return ch
}

// JudgeResult is what cfg's guard makes of c's recorded upstream result:
// its strongest action ("" for none), the rule behind it and why; ok is
// false when c has no recorded upstream result.
func JudgeResult(ctx context.Context, cfg *config.Config, c Call) (would, rule, why string, ok bool) {
	if c.Answer == "" || c.Descriptor.Server() == "" {
		return "", "", "", false
	}
	j := newResultJudge(cfg)
	c.ResultWas = "\x00" // never equal: judge always answers
	ch := j.judge(ctx, c)
	if ch == nil {
		return "", "", "", true
	}
	return ch.Would, ch.Rule, ch.Why, true
}
