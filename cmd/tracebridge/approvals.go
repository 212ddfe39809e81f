package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/projections"
)

func runApprovals(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("approvals")
	asJSON := fs.Bool("json", false, "list as JSON")
	reason := fs.String("reason", "", "why (recorded with the decision)")
	usage := "approvals list [--json]\n       tracebridge approvals show ID [--json]\n       tracebridge approvals approve ID [--reason TEXT]\n       tracebridge approvals deny ID [--reason TEXT]\n\nTool calls that need approval wait (up to approval.timeout in tracebridge.toml)\nfor an operator. list shows the ones waiting (long arguments cut: --json has\nthem whole); show prints one with its arguments whole, as the call would send\nthem; approve or deny answers one by its ID. A decision is bound to the exact\narguments (their hash) it was shown with, and it is recorded in the event log\nlike everything else."
	if err := m.parse(fs, usage, args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("approvals", rest, "want list, show ID, approve ID or deny ID"); err != nil {
		return err
	}
	node, err := m.openLog(ctx, "approvals")
	if err != nil {
		return err
	}
	defer node.Close()
	pending, err := projections.PendingApprovals(ctx, node, m.Now())
	if err != nil {
		return err
	}
	switch rest[0] {
	case "list":
		if len(rest) != 1 {
			return usageError{"list takes no arguments"}
		}
		if *asJSON {
			enc := json.NewEncoder(m.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(pending)
		}
		if len(pending) == 0 {
			fmt.Fprintln(m.Stdout, "no tool call is waiting for approval")
			return nil
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tREQUEST\tTOOL\tWAITS UNTIL\tARGS")
		for _, p := range pending {
			// The request's id whole, as `tail --request` and `replay`
			// take it (a cut one could name two requests).
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.RequestID, p.Tool, p.Deadline.Local().Format("15:04:05"), argsLine(p))
		}
		return tw.Flush()
	case "show":
		if len(rest) != 2 {
			return usageError{"show takes one approval ID (see `tracebridge approvals list`)"}
		}
		return showApproval(m, pending, rest[1], *asJSON)
	case "approve", "deny":
		if len(rest) != 2 {
			return usageError{rest[0] + " takes one approval ID (see `tracebridge approvals list`)"}
		}
		decision := events.Approve
		if rest[0] == "deny" {
			decision = events.Deny
		}
		return decide(ctx, m, node, pending, rest[1], decision, *reason)
	}
	return usageError{fmt.Sprintf("unknown action %q: want list, show, approve or deny", rest[0])}
}

// listArgs is how much of the arguments a list line shows.
const listArgs = 120

// argsLine is p's arguments on one line of a list: whole when short, else
// their start, their size and where to read them whole.
func argsLine(p projections.Approval) string {
	a := strings.Join(strings.Fields(p.Args), " ")
	if len(a) <= listArgs {
		return a
	}
	cut := listArgs
	for cut > 0 && !utf8.RuneStart(a[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… [%d bytes in all: tracebridge approvals show %s]", a[:cut], len(p.Args), p.ID)
}

// showApproval prints one waiting approval with its arguments whole.
func showApproval(m *Main, pending []projections.Approval, id string, asJSON bool) error {
	id, err := resolveID(id, "approval", func() ([]string, error) {
		var ids []string
		for _, p := range pending {
			ids = append(ids, p.ID)
		}
		return ids, nil
	})
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.ID != id {
			continue
		}
		if asJSON {
			enc := json.NewEncoder(m.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(p)
		}
		fmt.Fprintf(m.Stdout, "approval %s\ntool      %s\nrequest   %s\nclient    %s\nserver    %s\nwaits     until %s\nargs hash %s\narguments (%d bytes, whole):\n%s\n",
			p.ID, p.Tool, p.RequestID, p.Client, p.Server, p.Deadline.Local().Format("15:04:05"), p.ArgsHash, len(p.Args), indentJSON(p.Args))
		return nil
	}
	return fmt.Errorf("no approval %s is waiting", id)
}

func decide(ctx context.Context, m *Main, node *hub.Node, pending []projections.Approval, id, decision, reason string) error {
	id, err := resolveID(id, "approval", func() ([]string, error) {
		var ids []string
		for _, p := range pending {
			ids = append(ids, p.ID)
		}
		return ids, nil
	})
	if err != nil {
		return errors.New(err.Error() + " (see `tracebridge approvals list`)")
	}
	var p *projections.Approval
	for i := range pending {
		if pending[i].ID == id {
			p = &pending[i]
		}
	}
	if p == nil {
		return errors.New("no call is waiting with approval ID " + id + " (decided already, timed out, or never asked; see `tracebridge approvals list`)")
	}
	if !node.Online() {
		return errors.New("no hub is running, so no call can be waiting")
	}
	if decision == events.Approve {
		// The command line names no one the issuer authenticated: where
		// the approval asks for deciders or four eyes, it cannot give it
		// (and would take the log's one place for a decision).
		if err := p.Rule().Check(p.User, identity.User{}); err != nil {
			return fmt.Errorf("%s: %v: approve it in the UI (`tracebridge ui`), signed in", events.CodeDeciderRefused, err)
		}
	}
	by := "operator"
	if u, err := user.Current(); err == nil {
		by = "operator:" + u.Username
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	em, err := m.emitter(dir, node, m.logger())
	if err != nil {
		return err
	}
	ev := projections.Decision(*p, decision, by, reason, m.Now())
	em.Emit(ev)
	if err := em.Close(ctx); err != nil {
		return fmt.Errorf("the decision was not recorded: %w", err)
	}
	// The log keeps one decision per approval: say whose it kept.
	evs, err := node.ByRequest(ctx, p.RequestID)
	if err != nil {
		return err
	}
	if held, ok := projections.Decided(evs, p.ID); !ok || !projections.Won(held, ev) {
		return fmt.Errorf("%s: approval %s was decided already (%s by %s)", events.CodeNotPending, p.ID, held.Attrs.Get(events.AttrDecision), held.Attrs.Get(events.AttrBy))
	}
	fmt.Fprintf(m.Stdout, "%s %s (%s, arguments %s…)\n", projections.PastTense(decision), p.ID, p.Tool, p.ArgsHash[:12])
	return nil
}

// indentJSON indents a JSON text; anything else is returned as it is.
func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s
	}
	return b.String()
}
