package policy

import (
	"github.com/tracebridge/tracebridge/identity"

	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// Rule is one [policy.rules.NAME] table: when a call of one of Tools (tool
// id patterns; none: every tool) makes When (a CEL expression, ADR 0019)
// true, Effect decides it, and Message tells the caller and the operator
// why.
type Rule struct {
	Tools   []string `toml:"tools"`
	When    string   `toml:"when"`
	Effect  string   `toml:"effect"`
	Message string   `toml:"message"`
	// Phase is what the rule judges: "call" (default: the arguments, before
	// anything runs) or "result" (the result, before the client reads it;
	// effect deny blocks it, flag annotates it).
	Phase string `toml:"phase"`
}

// Rule phases (PhaseResult is the guard's, in pack.go).
const PhaseCall = "call"

// EffectFlag is a result rule's effect that records the result and
// annotates it for the client, as the guard's flag does.
const EffectFlag = "flag"

// Sep joins a server's name and its tool's name: SERVER__tool.
const Sep = "__"

// Rule effects. When several rules match a call, deny wins over approve,
// and approve over allow: the order of the file does not matter.
const (
	EffectAllow   = "allow"   // allowed without approval
	EffectApprove = "approve" // allowed once an operator approves
	EffectDeny    = "deny"
)

// CostLimit bounds one rule's evaluation (CEL's cost units: about one
// per operation, a string function one per byte it reads); a rule that
// would cost more fails, and a failed rule denies the call.
const CostLimit = 1_000_000

// Timeout bounds the evaluation of every rule of one call, whatever
// its cost: a hostile argument cannot hold a call in the policy step.
const Timeout = 100 * time.Millisecond

// Input is what a rule sees of one call.
type Input struct {
	Tool   string // the catalog id (server__tool, or the tool's own name with prefix = false)
	Server string // the upstream server ("" for the bridge's own tools)
	// Qualified is an upstream tool's server__tool whatever its listing
	// name: a rule's tools match either ("" for the bridge's own tools).
	Qualified   string
	Annotations map[string]bool // the tool's MCP annotations, with the specification's defaults
	Args        map[string]any  // the arguments, parsed JSON
	RawArgs     json.RawMessage // the arguments as sent (the guard's pack reads them)
	Client      string          // the MCP client (name/version)
	Session     string
	Caller      Caller
	Time        time.Time
	// Phase is PhaseCall ("" too) or PhaseResult; Result is what a result
	// rule sees of the result (NewResultInput).
	Phase  string
	Result map[string]any
}

// Caller is who sent the call, as the bridge knows it: the transport
// (stdio, or http: the front door) and the user id of the process (the
// loopback guard admits only this user's, so it is the bridge's own).
type Caller struct {
	Transport string
	UID       int
	// User is who the front door authenticated (zero: no one was, over
	// stdio or with the data dir's token).
	User identity.User
}

// userVar is the rules' user.
func userVar(u identity.User) map[string]any {
	groups := u.Groups
	if groups == nil {
		groups = []string{}
	}
	return map[string]any{"sub": u.Subject, "name": u.Name, "email": u.Email, "issuer": u.Issuer, "client_id": u.ClientID,
		"groups": groups, "authenticated": !u.IsZero()}
}

// CallerOf is the caller of a call that came over transport (pipe or tcp,
// as the MCP connection records it).
func CallerOf(transport string) Caller {
	c := Caller{Transport: "stdio", UID: os.Getuid()}
	if transport == "tcp" {
		c.Transport = "http"
	}
	return c
}

// Verdict is what the rules say of one call: the effect of the rule
// that decides (none: no rule matched) and every rule that matched.
type Verdict struct {
	Effect  string   `json:"effect,omitempty"`
	Rule    string   `json:"rule,omitempty"`
	Message string   `json:"message,omitempty"`
	Matched []string `json:"matched,omitempty"`
	// Failed names a rule that could not be evaluated (the call is denied:
	// rules fail closed) and why.
	Failed string `json:"failed,omitempty"`
	Error  string `json:"error,omitempty"`
}

// RuleSet is a configuration's rules, compiled.
type RuleSet struct {
	rules   []compiledRule // sorted by name
	version string
}

type compiledRule struct {
	name string
	Rule
	prg cel.Program
	ast *cel.Ast
}

var ruleNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_-]*$`)

// ruleEnv declares what a rule sees.
var ruleEnv = func() *cel.Env {
	env, err := cel.NewEnv(
		cel.Variable("tool", cel.StringType),
		cel.Variable("server", cel.StringType),
		cel.Variable("annotations", cel.MapType(cel.StringType, cel.BoolType)),
		cel.Variable("args", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("client", cel.StringType),
		cel.Variable("session", cel.StringType),
		cel.Variable("caller", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("user", cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable("now", cel.TimestampType),
		cel.Variable("phase", cel.StringType),
		cel.Variable("result", cel.MapType(cel.StringType, cel.DynType)),
		ext.Strings(),
	)
	if err != nil {
		panic(err)
	}
	return env
}()

// compile checks one rule and compiles its expression.
func compile(name string, r Rule) (compiledRule, []string) {
	var problems []string
	if !ruleNameRE.MatchString(name) {
		problems = append(problems, fmt.Sprintf("rule name %q: use letters, digits, '-' and '_'", name))
	}
	switch {
	case r.Phase != "" && r.Phase != PhaseCall && r.Phase != PhaseResult:
		problems = append(problems, fmt.Sprintf("phase %q is not call or result", r.Phase))
	case r.Phase == PhaseResult && r.Effect != EffectDeny && r.Effect != EffectFlag:
		problems = append(problems, fmt.Sprintf("effect %q: a result rule's effect is deny (block the result) or flag", r.Effect))
	case r.Phase != PhaseResult && r.Effect != EffectAllow && r.Effect != EffectApprove && r.Effect != EffectDeny:
		problems = append(problems, fmt.Sprintf("effect %q is not one of allow, approve, deny", r.Effect))
	}
	for _, t := range r.Tools {
		if _, err := path.Match(t, ""); err != nil || t == "" {
			problems = append(problems, fmt.Sprintf("tools: %q is not a tool id or a valid pattern", t))
		}
	}
	c := compiledRule{name: name, Rule: r}
	if strings.TrimSpace(r.When) == "" {
		return c, append(problems, `when is empty: write the condition, such as 'args.path.startsWith("docs/")' (or "true" for every call of tools)`)
	}
	ast, iss := ruleEnv.Compile(r.When)
	if iss.Err() != nil {
		return c, append(problems, "when: "+strings.ReplaceAll(iss.Err().Error(), "\n", " "))
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType { // dyn (args.flag) is checked when evaluated
		return c, append(problems, fmt.Sprintf("when is a %s, not true or false", ast.OutputType()))
	}
	prg, err := ruleEnv.Program(ast, cel.CostLimit(CostLimit), cel.InterruptCheckFrequency(100))
	if err != nil {
		return c, append(problems, "when: "+err.Error())
	}
	c.prg, c.ast = prg, ast
	return c, problems
}

// NewRuleSet compiles rules (by name) into a rule set of policy version
// version; a rule that does not compile is an error naming it.
func NewRuleSet(rules map[string]Rule, version string) (*RuleSet, error) {
	rs := &RuleSet{version: version}
	for _, name := range slices.Sorted(maps.Keys(rules)) {
		cr, problems := compile(name, rules[name])
		if len(problems) > 0 {
			return nil, fmt.Errorf("rule %s: %s", name, strings.Join(problems, "; "))
		}
		rs.rules = append(rs.rules, cr)
	}
	return rs, nil
}

// Check lists what is wrong with rule name (its name, effect, tools
// patterns, when expression); none when it compiles.
func Check(name string, r Rule) []string {
	_, problems := compile(name, r)
	return problems
}

// Version is the policy version the rules belong to (config.PolicyVersion).
func (rs *RuleSet) Version() string { return rs.version }

// Len is how many rules there are.
func (rs *RuleSet) Len() int {
	if rs == nil {
		return 0
	}
	return len(rs.rules)
}

// Decide evaluates every rule whose tools match in.Tool. Deny wins over
// approve, approve over allow; among rules of the same effect the first by
// name decides. A rule that cannot be evaluated (a field the arguments
// lack, its cost limit, Timeout, ctx ending) denies: rules fail
// closed.
func (rs *RuleSet) Decide(ctx context.Context, in Input) Verdict {
	var v Verdict
	if rs == nil || len(rs.rules) == 0 {
		return v
	}
	phase := in.Phase
	if phase == "" {
		phase = PhaseCall
	}
	vars := map[string]any{"tool": in.Tool, "server": in.Server, "annotations": in.Annotations, "args": in.Args,
		"client": in.Client, "session": in.Session, "now": in.Time, "phase": phase, "result": in.Result,
		"caller": map[string]any{"transport": in.Caller.Transport, "uid": in.Caller.UID}, "user": userVar(in.Caller.User)}
	if in.Result == nil {
		vars["result"] = map[string]any{}
	}
	if in.Annotations == nil {
		vars["annotations"] = map[string]bool{}
	}
	if in.Args == nil {
		vars["args"] = map[string]any{}
	}
	act, err := interpreter.NewActivation(vars) // once for every rule
	if err != nil {
		return Verdict{Effect: EffectDeny, Failed: "(input)", Error: err.Error(), Message: "the call could not be given to the rules: " + err.Error()}
	}
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	for _, r := range rs.rules {
		if !r.appliesTo(in.Tool, in.Qualified) || r.phase() != phase {
			continue
		}
		out, _, err := r.prg.ContextEval(ctx, act)
		if err != nil {
			return Verdict{Effect: EffectDeny, Rule: r.name, Matched: v.Matched, Failed: r.name, Error: err.Error(),
				Message: fmt.Sprintf("rule %s could not be evaluated (%v): a rule that fails denies the call", r.name, err)}
		}
		match, ok := out.Value().(bool)
		if !ok {
			return Verdict{Effect: EffectDeny, Rule: r.name, Matched: v.Matched, Failed: r.name, Error: fmt.Sprintf("when is %v, not true or false", out.Value()),
				Message: fmt.Sprintf("rule %s could not be evaluated (when is %v, not true or false): a rule that fails denies the call", r.name, out.Value())}
		}
		if !match {
			continue
		}
		v.Matched = append(v.Matched, r.name)
		if rank[r.Effect] > rank[v.Effect] {
			v.Effect, v.Rule, v.Message = r.Effect, r.name, r.Message
		}
	}
	return v
}

// rank orders the effects: deny wins over approve, approve over allow.
var rank = map[string]int{EffectAllow: 1, EffectFlag: 1, EffectApprove: 2, EffectDeny: 3}

// phase is the rule's phase, PhaseCall when unset.
func (r compiledRule) phase() string {
	if r.Phase == "" {
		return PhaseCall
	}
	return r.Phase
}

// HasPhase reports whether any rule judges phase.
func (rs *RuleSet) HasPhase(phase string) bool {
	if rs == nil {
		return false
	}
	for _, r := range rs.rules {
		if r.phase() == phase {
			return true
		}
	}
	return false
}

// appliesTo reports whether the tool, by any of its names (its id, its
// server-qualified name), is one of the rule's tools.
func (r compiledRule) appliesTo(names ...string) bool {
	if len(r.Tools) == 0 {
		return true
	}
	for _, t := range r.Tools {
		if MatchesTool(t, names...) {
			return true
		}
	}
	return false
}

// MatchesTool reports whether pattern (a tool id or a path.Match pattern)
// names a tool known by names; empty names are skipped.
func MatchesTool(pattern string, names ...string) bool {
	for _, n := range names {
		if n == "" {
			continue
		}
		if ok, _ := path.Match(pattern, n); ok || pattern == n {
			return true
		}
	}
	return false
}

// Qualified is a server's tool's policy name, server__tool, whatever name
// it is listed under.
func Qualified(server, tool string) string {
	if server == "" {
		return ""
	}
	return server + Sep + tool
}

// Names is the rules' names, sorted.
func (rs *RuleSet) Names() []string {
	out := make([]string, len(rs.rules))
	for i, r := range rs.rules {
		out[i] = r.name
	}
	sort.Strings(out)
	return out
}

// Result is one rule's part in a call's decision (RuleSet.Explain).
type Result struct {
	Name    string `json:"name"`
	Effect  string `json:"effect"`
	When    string `json:"when"`
	Applies bool   `json:"applies"` // its tools include the call's
	Matched bool   `json:"matched"`
	Error   string `json:"error,omitempty"`
}

// Explain evaluates every rule on in, one by one: which apply to the
// tool, which matched, which could not be evaluated.
func (rs *RuleSet) Explain(ctx context.Context, in Input) []Result {
	if rs == nil {
		return nil
	}
	out := make([]Result, 0, len(rs.rules))
	for _, r := range rs.rules {
		phase := in.Phase
		if phase == "" {
			phase = PhaseCall
		}
		res := Result{Name: r.name, Effect: r.Effect, When: r.When, Applies: r.appliesTo(in.Tool, in.Qualified) && r.phase() == phase}
		if res.Applies {
			one := &RuleSet{rules: []compiledRule{r}}
			v := one.Decide(ctx, in)
			res.Matched, res.Error = len(v.Matched) > 0, v.Error
		}
		out = append(out, res)
	}
	return out
}
