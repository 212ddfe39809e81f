package config

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/tracebridge/tracebridge/policy"
)

// The TOML shape of [policy.rules] is policy.Rule; compiling, deciding and
// explaining live in package policy. What is the configuration's own: its
// rules compiled (Rules), the version of what decides calls
// (PolicyVersion), and the rules checked against the tools' schemas
// (ruleFields, on the line of each rule's when).

// Rules compiles c's [policy.rules]; Load has checked them, so an error
// here is a configuration Parse did not check.
func (c *Config) Rules() (*policy.RuleSet, error) {
	return policy.NewRuleSet(c.Policy.Rules, c.PolicyVersion())
}

// PolicyVersion is a hash of what decides calls: [policy] (grants, denials,
// rules), [approval] mode, the tools' approval overrides, the servers'
// read_only and approval lists, and the guard's rules as configured. An approval given under one version is
// decided again under another.
func (c *Config) PolicyVersion() string {
	type serverPolicy struct {
		ReadOnly []string          `json:"readOnly,omitempty"`
		Approval map[string]string `json:"approval,omitempty"`
		Guard    map[string]string `json:"guard,omitempty"`
	}
	v := struct {
		Policy    Policy                  `json:"policy"`
		Mode      string                  `json:"mode"`
		Approvals map[string]string       `json:"approvals,omitempty"`
		Servers   map[string]serverPolicy `json:"servers,omitempty"`
		Guard     *Guard                  `json:"guard,omitempty"` // only when set: versions before the guard stay as they were
	}{Policy: c.Policy, Mode: c.Approval.Mode, Approvals: map[string]string{}, Servers: map[string]serverPolicy{}}
	if len(c.Guard.Off) > 0 || len(c.Guard.Actions) > 0 {
		v.Guard = &c.Guard
	}
	for id, t := range c.Tools {
		if t.Approval != "" {
			v.Approvals[id] = t.Approval
		}
	}
	for name, s := range c.Servers {
		if len(s.ReadOnly) > 0 || len(s.Approval) > 0 || len(s.Guard) > 0 {
			v.Servers[name] = serverPolicy{s.ReadOnly, s.Approval, s.Guard}
		}
	}
	b, _ := json.Marshal(v) // maps marshal in key order
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// ruleFields checks each rule's args.FIELD paths against the input schemas
// of the tools it applies to (policy.Fields), each problem on the rule's
// when line.
func (c *Config) ruleFields(file string, schemas map[string]json.RawMessage) []string {
	var problems []string
	for _, name := range sortedKeys(c.Policy.Rules) {
		k := "policy.rules." + name + ".when"
		for _, p := range policy.Fields(name, c.Policy.Rules[name], schemas) {
			problems = append(problems, fmt.Sprintf("%s:%d: %s: %s", file, lineOf(c.lines, k), k, p))
		}
	}
	return problems
}
