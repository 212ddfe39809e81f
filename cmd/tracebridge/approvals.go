package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
)

func runApprovals(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("approvals")
	asJSON := fs.Bool("json", false, "list as JSON")
	reason := fs.String("reason", "", "why (recorded with the decision)")
	usage := "approvals list [--json]\n       tracebridge approvals approve ID [--reason TEXT]\n       tracebridge approvals deny ID [--reason TEXT]\n\nTool calls that need approval wait (up to approval.timeout in tracebridge.toml)\nfor an operator. list shows the ones waiting; approve or deny answers one by its\nID. A decision is bound to the exact arguments (their hash) it was shown with,\nand it is recorded in the event log like everything else."
	if err := m.parse(fs, usage, args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("approvals", rest, "want list, approve ID or deny ID"); err != nil {
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
			// The request's id as `tail --request` and `replay` take it
			// (a unique prefix serves).
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, shortID(p.RequestID.String()), p.Tool, p.Deadline.Local().Format("15:04:05"), p.Args)
		}
		return tw.Flush()
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
	return usageError{fmt.Sprintf("unknown action %q: want list, approve or deny", rest[0])}
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
