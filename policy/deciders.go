package policy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/identity"
)

// Deciders is who may approve a call waiting for approval ([approval]
// deciders and four_eyes, as the approval request recorded them): members
// of Groups (none named: anyone who may decide), and, with FourEyes,
// someone other than the user who made the call. Either asks for a
// decider the UI authenticated ([auth]): a decision by no one in
// particular (the CLI, the local launch link) does not count.
type Deciders struct {
	Groups   []string
	FourEyes bool
}

// On reports whether the deciders are restricted at all.
func (d Deciders) On() bool { return len(d.Groups) > 0 || d.FourEyes }

// Check says why decider may not approve requester's call (nil: they may).
// Denying is anyone's: it never needs this check.
func (d Deciders) Check(requester, decider identity.User) error {
	if !d.On() {
		return nil
	}
	if decider.IsZero() {
		return fmt.Errorf("this approval needs a decider signed in to the UI with [auth] (%s): a decision by no one in particular does not count", d)
	}
	if len(d.Groups) > 0 && !slices.ContainsFunc(d.Groups, decider.InGroup) {
		return fmt.Errorf("%s is in none of the groups that may approve it (%s)", decider.Display(), strings.Join(d.Groups, ", "))
	}
	if d.FourEyes && decider.Same(requester) {
		return fmt.Errorf("%s made this call: four eyes ([approval] four_eyes) need another approver", decider.Display())
	}
	return nil
}

func (d Deciders) String() string {
	var parts []string
	if len(d.Groups) > 0 {
		parts = append(parts, "deciders: "+strings.Join(d.Groups, ", "))
	}
	if d.FourEyes {
		parts = append(parts, "four eyes")
	}
	return strings.Join(parts, "; ")
}
