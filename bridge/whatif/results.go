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

// verdict is what the candidate's guard makes of c's recorded upstream
// result (the upstream's answer as the log kept it, redacted): its
// strongest action ("" for none), the rule behind it and why; ok is false
// when c has none.
func (j *resultJudge) verdict(ctx context.Context, c Call) (would, rule, why string, ok bool) {
	server := c.Descriptor.Server()
	var res sdk.CallToolResult
	if c.Answer == "" || server == "" || json.Unmarshal([]byte(c.Answer), &res) != nil {
		return "", "", "", false
	}
	act := func(rule string) string { return j.cfg.GuardAction(server, rule) }
	judged := guard.Result(server, &res, j.red, act, guard.ResultRules(ctx, j.rules, c.Input))
	would = guard.Worst(judged.Findings)
	for _, f := range judged.Findings {
		if f.Action == would {
			return would, f.Rule, f.Why, true
		}
	}
	return would, "", "", true
}

// judge is the change the candidate makes to c's recorded result; nil
// when it judges it as it was judged.
func (j *resultJudge) judge(ctx context.Context, c Call) *ResultChange {
	would, rule, why, ok := j.verdict(ctx, c)
	if !ok || would == c.ResultWas {
		return nil
	}
	return &ResultChange{RequestID: c.RequestID, Tool: c.Descriptor.ID, Was: c.ResultWas, Would: would, Rule: rule, Why: why}
}

// JudgeResult is what cfg's guard makes of c's recorded upstream result:
// its strongest action ("" for none), the rule behind it and why; ok is
// false when c has no recorded upstream result.
func JudgeResult(ctx context.Context, cfg *config.Config, c Call) (would, rule, why string, ok bool) {
	return newResultJudge(cfg).verdict(ctx, c)
}
