package policy_test

import (
	"context"
	"fmt"
	"time"

	"github.com/tracebridge/tracebridge/policy"
)

// A rule set decides a call from what NewInput builds of it: here a deny
// rule over an upstream server's tools, by their server-qualified name.
func ExampleRuleSet_Decide() {
	rs, err := policy.NewRuleSet(map[string]policy.Rule{
		"no-prod": {Tools: []string{"gh__*"}, When: `has(args.repo) && args.repo == "prod"`, Effect: policy.EffectDeny, Message: "not on prod"},
	}, "v1")
	if err != nil {
		panic(err)
	}
	call := func(args string) policy.Input {
		return policy.NewInput(policy.Tool{ID: "gh__delete_repo", Server: "gh", Name: "delete_repo"}, []byte(args), "client/1", "", policy.Caller{}, time.Now())
	}
	for _, args := range []string{`{"repo":"prod"}`, `{"repo":"dev"}`} {
		v := rs.Decide(context.Background(), call(args))
		fmt.Printf("%s: effect %q rule %q\n", args, v.Effect, v.Rule)
	}
	// Output:
	// {"repo":"prod"}: effect "deny" rule "no-prod"
	// {"repo":"dev"}: effect "" rule ""
}
