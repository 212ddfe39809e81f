package guard

import (
	"encoding/json"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// Finding is one thing the guard saw: the rule of the pack that saw it,
// the action that rule takes, one line of why, the text that triggered it
// (cut to maxTrigger bytes), and where it was (a field path).
type Finding struct {
	Rule    string `json:"rule"`
	Action  string `json:"action"`
	Why     string `json:"why"`
	Trigger string `json:"trigger,omitempty"`
	Where   string `json:"where,omitempty"`
}

// maxTrigger bounds a finding's trigger: enough to read it, not the text.
const maxTrigger = 200

// Actions says what each rule of the pack does (config.GuardAction for one
// server): policy.Action*; policy.ActionOff skips the rule.
type Actions func(rule string) string

// Default is every rule's default action.
func Default(rule string) string {
	r, _ := policy.PackRuleOf(rule)
	return r.Default
}

// finder collects findings for the rules that are on.
type finder struct {
	act Actions
	out []Finding
}

// on reports whether rule is judged.
func (f *finder) on(rule string) bool { return f.act(rule) != policy.ActionOff }

func (f *finder) add(rule, why, trigger, where string) {
	f.out = append(f.out, Finding{Rule: rule, Action: f.act(rule), Why: why, Trigger: clip(trigger, maxTrigger), Where: where})
}

// Worst is the strongest action among fs: block over redact over flag;
// "" for none.
func Worst(fs []Finding) string {
	rank := map[string]int{policy.ActionFlag: 1, policy.ActionRedact: 2, policy.ActionBlock: 3}
	w := ""
	for _, f := range fs {
		if rank[f.Action] > rank[w] {
			w = f.Action
		}
	}
	return w
}

// Blocking is the first finding of fs whose action blocks; false when none
// does.
func Blocking(fs []Finding) (Finding, bool) {
	for _, f := range fs {
		if f.Action == policy.ActionBlock {
			return f, true
		}
	}
	return Finding{}, false
}

// Rules is the distinct rules of fs, in order.
func Rules(fs []Finding) []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range fs {
		if !seen[f.Rule] {
			seen[f.Rule] = true
			out = append(out, f.Rule)
		}
	}
	return out
}

// JSON is fs as recorded in an event's findings attribute.
func JSON(fs []Finding) string {
	b, _ := json.Marshal(fs)
	return string(b)
}

// Attrs are the attributes every guard event carries (guard.args.judged,
// guard.result.judged): the rule of lead, the worst action of fs, the
// pack, lead's trigger and its fingerprint, and the findings whole.
func Attrs(lead Finding, fs []Finding, fingerprint func(string) string) events.Attrs {
	return events.A(events.AttrRule, lead.Rule, "action", Worst(fs), "pack", policy.Pack, "trigger", lead.Trigger,
		"triggerHmac", fingerprint(lead.Trigger), "findings", JSON(fs))
}

// canonical is v as generic JSON values.
func canonical(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}
