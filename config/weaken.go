package config

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// Weakened lists how next loosens prev, one line each: approval loosened
// ([approval] mode, a tool's or a server's approval, a server's read_only),
// a deny or a rule removed or its effect softened, a grant or a server
// added, a guard rule turned off or softened, first_sight relaxed. None
// when next is as strict or stricter (a change of a rule's condition is
// not judged: it is in the loaded event's config).
func Weakened(prev, next *Config) []string {
	if prev == nil || next == nil {
		return nil
	}
	var out []string
	say := func(format string, args ...any) { out = append(out, fmt.Sprintf(format, args...)) }
	if strict[next.Approval.Mode] < strict[prev.Approval.Mode] {
		say("[approval] mode %s → %s", prev.Approval.Mode, next.Approval.Mode)
	}
	for _, d := range prev.Policy.Deny {
		if !slices.Contains(next.Policy.Deny, d) {
			say("[policy] deny no longer lists %q", d)
		}
	}
	for _, g := range next.Policy.Grant {
		if !slices.Contains(prev.Policy.Grant, g) {
			say("[policy] grant adds %q", g)
		}
	}
	for _, name := range sortedKeys(prev.Policy.Rules) {
		r, ok := next.Policy.Rules[name]
		switch {
		case !ok:
			say("[policy.rules.%s] removed (effect was %s)", name, prev.Policy.Rules[name].Effect)
		case effectRank[r.Effect] < effectRank[prev.Policy.Rules[name].Effect]:
			say("[policy.rules.%s] effect %s → %s", name, prev.Policy.Rules[name].Effect, r.Effect)
		}
	}
	for _, id := range sortedKeys(prev.Tools) {
		if prev.Tools[id].Approval == "always" && next.Tools[id].Approval != "always" {
			say("[tools.%s] approval always → %q", id, next.Tools[id].Approval)
		}
	}
	for _, name := range sortedKeys(next.Servers) {
		out = append(out, serverWeakened(name, prev, next)...)
	}
	for _, id := range policy.PackRules {
		if a, b := prev.GuardAction("", id.ID), next.GuardAction("", id.ID); actionRank[b] < actionRank[a] {
			say("[guard] rule %s: %s → %s", id.ID, a, b)
		}
	}
	if firstSightRank[next.FirstSightMode()] < firstSightRank[prev.FirstSightMode()] {
		say("[gateway] first_sight %s → %s", prev.FirstSightMode(), next.FirstSightMode())
	}
	return out
}

// serverWeakened is how [servers.NAME] in next loosens prev's.
func serverWeakened(name string, prev, next *Config) []string {
	p, existed := prev.Servers[name]
	if !existed {
		return []string{fmt.Sprintf("[servers.%s] added (its tools are granted)", name)}
	}
	n := next.Servers[name]
	var out []string
	for _, pat := range sortedKeys(n.Approval) {
		if n.Approval[pat] == "never" && p.Approval[pat] != "never" {
			out = append(out, fmt.Sprintf("[servers.%s] approval %q = never", name, pat))
		}
	}
	for _, pat := range n.ReadOnly {
		if !slices.Contains(p.ReadOnly, pat) {
			out = append(out, fmt.Sprintf("[servers.%s] read_only adds %q (its calls need no approval)", name, pat))
		}
	}
	for _, id := range policy.PackRules {
		if a, b := prev.GuardAction(name, id.ID), next.GuardAction(name, id.ID); actionRank[b] < actionRank[a] {
			out = append(out, fmt.Sprintf("[servers.%s] guard rule %s: %s → %s", name, id.ID, a, b))
		}
	}
	return out
}

var (
	strict         = map[string]int{ModeAllow: 0, ModePrompt: 1, ModeDeny: 2}
	effectRank     = map[string]int{policy.EffectAllow: 0, policy.EffectFlag: 1, policy.EffectApprove: 1, policy.EffectDeny: 2}
	actionRank     = map[string]int{policy.ActionOff: 0, policy.ActionFlag: 1, policy.ActionRedact: 2, policy.ActionBlock: 3}
	firstSightRank = map[string]int{FirstSightTrust: 0, FirstSightInspect: 1, FirstSightReview: 2}
)

// WeakenedEvent records that the configuration at path, put in force,
// loosened what the one before it held (Weakened's lines).
func WeakenedEvent(path string, changes []string) events.Event {
	b, _ := json.Marshal(changes)
	return events.Event{Kind: events.KindConfigWeakened, Outcome: events.OK,
		Attrs: events.A(events.AttrPath, path, "changes", string(b), "count", fmt.Sprint(len(changes)))}
}
