package guard

import (
	"context"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/policy"
)

// ResultRules is More for the policy's rules with phase "result" (rs nil:
// none), for a call the rules see as in: a rule that matches with effect
// deny blocks the result, flag flags it, and one that cannot be evaluated
// blocks it (rules fail closed). The live gateway and `policy test` judge
// results with it alike.
func ResultRules(ctx context.Context, rs *policy.RuleSet, in policy.Input) More {
	if rs == nil {
		return nil
	}
	return func(res *sdk.CallToolResult) []Finding {
		v := rs.Decide(ctx, policy.NewResultInput(in, Text(res), structured(res.StructuredContent), res.IsError))
		switch {
		case v.Failed != "":
			return []Finding{{Rule: "policy:" + v.Failed, Action: policy.ActionBlock, Why: v.Message}}
		case v.Effect == policy.EffectDeny:
			return []Finding{{Rule: "policy:" + v.Rule, Action: policy.ActionBlock, Why: "rule " + v.Rule + " blocks it" + colon(v.Message)}}
		case v.Effect == policy.EffectFlag:
			return []Finding{{Rule: "policy:" + v.Rule, Action: policy.ActionFlag, Why: "rule " + v.Rule + " flags it" + colon(v.Message)}}
		}
		return nil
	}
}

func colon(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}
