package executor

import (
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// F-C2: in cluster mode a decision counts only when the member whose call
// asked for it published it: bob's decision for alice's approval, "by"
// alice, is not taken. The twins: alice's own decision (from any of her
// machines), and a local log without origins, are.
func TestDecisionComesFromTheAskingMember(t *testing.T) {
	ap := events.NewID()
	asked := func(user string) events.Event {
		return events.Event{Kind: events.KindApprovalRequested, Attrs: events.A(events.AttrApprovalID, ap.String(), events.AttrOriginUser, user)}
	}
	decided := func(user, machine string) events.Event {
		return events.Event{Kind: events.KindApprovalDecided, Attrs: events.A(events.AttrApprovalID, ap.String(), events.AttrDecision, events.Approve,
			events.AttrBy, "operator:alice", events.AttrOriginUser, user, events.AttrOriginMachine, machine)}
	}
	for _, tc := range []struct {
		name string
		evs  []events.Event
		ok   bool
	}{
		{"another member, claiming alice", []events.Event{asked("alice"), decided("bob", "bobs-laptop")}, false},
		{"the asking member, another machine", []events.Event{asked("alice"), decided("alice", "alices-laptop")}, true},
		{"a local log", []events.Event{asked(""), decided("", "")}, true},
		{"a member allowed to decide for every origin", []events.Event{asked("alice"), decided("lead", "leads-desk")}, true},
	} {
		if _, ok := decisionOf(tc.evs, ap, []string{"lead"}); ok != tc.ok {
			t.Errorf("%s: taken %v, want %v", tc.name, ok, tc.ok)
		}
	}
}
