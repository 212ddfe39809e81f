package policy

import (
	"fmt"
	"slices"
)

// Pack is the rule pack the guard (bridge/guard) applies by default: what a
// tool says of itself, what a result tells the model and what a call sends
// are judged by these rules unless an operator turns one off ([guard] off)
// or chooses another action for it ([guard.actions], [servers.NAME.guard]).
// Its version is recorded with every judgment, so `policy test` can say
// what upgrading it would change.
const Pack = "tracebridge/default@1"

// Guard actions. Descriptor rules hold (a flagged tool is not listed until
// accepted), result rules redact, flag or block, argument rules block
// (deny) or flag (record only). Off turns a rule off.
const (
	ActionOff    = "off"
	ActionFlag   = "flag"   // recorded, and a result annotated for the client
	ActionRedact = "redact" // the text replaced (secrets) or removed (invisible characters)
	ActionBlock  = "block"  // a call denied, a result replaced by an error, a tool held
)

// Guard phases: what a rule judges.
const (
	PhaseDescriptor = "descriptor"
	PhaseResult     = "result"
	PhaseArgs       = "args"
)

// PackRule is one rule of the pack: its id, what it judges, what it does
// by default, the actions it may be given, and one line of why.
type PackRule struct {
	ID      string   `json:"id"`
	Phase   string   `json:"phase"`
	Default string   `json:"default"`
	Allowed []string `json:"allowed"`
	Why     string   `json:"why"`
}

// PackRules lists the pack, by phase.
var PackRules = []PackRule{
	{"tool-invisible-text", PhaseDescriptor, ActionBlock, []string{ActionBlock, ActionFlag}, "a description with invisible, bidi-override or tag characters shows the model text the operator never sees"},
	{"tool-instructions", PhaseDescriptor, ActionBlock, []string{ActionBlock, ActionFlag}, "a description that addresses the model (secrecy, overriding instructions, mandating other calls) is a prompt injection, not documentation"},
	{"tool-exfiltration", PhaseDescriptor, ActionBlock, []string{ActionBlock, ActionFlag}, "a description asking to send files or credentials to an address leaks them through the model"},
	{"tool-shadowing", PhaseDescriptor, ActionBlock, []string{ActionBlock, ActionFlag}, "a tool that claims precedence over another server's tool, or names it, steers calls away from the tool the user chose"},
	{"result-secret", PhaseResult, ActionRedact, []string{ActionRedact, ActionFlag, ActionBlock}, "a credential in a result reaches the model's context, its provider and every later call"},
	{"result-invisible-text", PhaseResult, ActionRedact, []string{ActionRedact, ActionFlag, ActionBlock}, "invisible characters in a result carry instructions the user cannot see"},
	{"result-injection", PhaseResult, ActionFlag, []string{ActionFlag, ActionBlock}, "a result that tells the model what to do (override, secrecy, other tools) is data posing as instructions"},
	{"credential-path", PhaseArgs, ActionBlock, []string{ActionBlock, ActionFlag}, "an argument naming a credential file (~/.ssh, ~/.aws, .env, /etc/shadow…) reads or moves a secret"},
	{"private-destination", PhaseArgs, ActionBlock, []string{ActionBlock, ActionFlag}, "a URL-like argument to a link-local, cloud metadata or private-range address reaches what the user's network protects"},
	{"shell-injection", PhaseArgs, ActionBlock, []string{ActionBlock, ActionFlag}, "shell separators or substitutions in an argument of a command-like tool run a second command"},
	{"undeclared-property", PhaseArgs, ActionBlock, []string{ActionBlock, ActionFlag}, "a property the tool's input schema never declared is a side channel to the server (InvalidArguments)"},
	{"cross-server-secret", PhaseArgs, ActionBlock, []string{ActionBlock, ActionFlag}, "a secret one server returned, sent to another server, moves a credential between trust domains"},
}

// PackRuleOf is the pack's rule id; false when there is none.
func PackRuleOf(id string) (PackRule, bool) {
	i := slices.IndexFunc(PackRules, func(r PackRule) bool { return r.ID == id })
	if i < 0 {
		return PackRule{}, false
	}
	return PackRules[i], true
}

// CheckAction says what is wrong with giving rule id action a; nil when
// it may.
func CheckAction(id, a string) error {
	r, ok := PackRuleOf(id)
	if !ok {
		return fmt.Errorf("%q is not a rule of %s (run `tracebridge policy pack` for the list)", id, Pack)
	}
	if a != ActionOff && !slices.Contains(r.Allowed, a) {
		return fmt.Errorf("rule %s takes %v or off, not %q", id, r.Allowed, a)
	}
	return nil
}
