package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
)

const toolsHelp = `tools list [--state pinned|changed|flagged|removed] [--json]
       tracebridge tools diff TOOL
       tracebridge tools accept TOOL --hash HASH [--reason TEXT]

The tools of upstream MCP servers ([servers.NAME] in tracebridge.toml) are
pinned: the first time the bridge sees a tool, the hash of its descriptor (name,
title, description, input and output schemas, annotations) is recorded. When a
server later lists the tool with another descriptor — a rug pull, or a poisoned
description — every call of it is refused with ToolChanged until an operator
looks at the change and accepts it.

The guard judges every descriptor it sees first or changed (invisible
characters, text that instructs the model, exfiltration, shadowing another
server's tool; docs/GUARD.md). A tool it flags on first sight is held: not
listed to clients, its calls refused with ToolFlagged, until accepted here.
"list" and "diff" show why.

  list     every pinned tool: its catalog name, state and hash
  diff     what changed: the pinned descriptor against the new one
  accept   pin the new descriptor you reviewed: --hash is the hash diff printed;
           a descriptor that changed since is refused (HashChanged), and one
           that cannot be shown whole cannot be accepted

TOOL is the catalog name (server__tool) or server/tool.`

func runTools(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("tools")
	c := &toolsCmd{m: m}
	fs.BoolVar(&c.json, "json", false, "list as JSON")
	fs.StringVar(&c.state, "state", "", "list only tools in this `STATE` (pinned, changed, flagged, removed)")
	fs.StringVar(&c.reason, "reason", "", "why (recorded with the acceptance)")
	fs.StringVar(&c.hash, "hash", "", "accept only this pending `HASH` (as `tools diff` printed it)")
	if err := m.parse(fs, toolsHelp, args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("tools", rest, "want list, diff TOOL or accept TOOL"); err != nil {
		return err
	}
	switch c.state {
	case "", projections.PinPinned, projections.PinChanged, projections.PinFlagged, projections.PinRemoved:
	default:
		return usageError{fmt.Sprintf("--state %q: want pinned, changed, flagged or removed", c.state)}
	}
	node, err := m.openLog(ctx, "tools")
	if err != nil {
		return err
	}
	defer node.Close()
	if c.pins, err = projections.Read[projections.Pin](ctx, node, projections.Query{View: projections.ViewPins, Status: c.state, Limit: 1 << 20}); err != nil {
		return err
	}
	switch {
	case rest[0] == "list" && len(rest) == 1:
		return c.list(ctx, node)
	case rest[0] == "list":
		return usageError{"list takes no arguments"}
	case rest[0] == "diff" && len(rest) == 2:
		return c.diff(rest[1])
	case rest[0] == "diff":
		return usageError{"diff takes one tool (see `tracebridge tools list`)"}
	case rest[0] == "accept" && len(rest) == 2:
		return c.accept(ctx, node, rest[1])
	case rest[0] == "accept":
		return usageError{"accept takes one tool (see `tracebridge tools list --state changed`)"}
	}
	return usageError{fmt.Sprintf("unknown action %q: want list, diff or accept", rest[0])}
}

// toolsCmd is `tools` over the pins view.
type toolsCmd struct {
	m                   *Main
	pins                []projections.Pin
	json                bool
	state, reason, hash string
}

func (c *toolsCmd) find(name string) (projections.Pin, error) {
	for _, p := range c.pins {
		if p.Name == name || projections.PinKey(p.Server, p.Tool) == name {
			return p, nil
		}
	}
	return projections.Pin{}, fmt.Errorf("no pinned tool is called %q (see `tracebridge tools list`)", name)
}

func (c *toolsCmd) list(ctx context.Context, node projections.Viewer) error {
	out := c.m.Stdout
	if c.json {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(c.pins)
	}
	if len(c.pins) == 0 && c.state != "" {
		all, err := node.View(ctx, projections.Query{View: projections.ViewPins, Limit: 1 << 20})
		if err == nil && len(all) > 0 {
			fmt.Fprintf(out, "no pinned tool is %s (%d pinned: tracebridge tools list)\n", c.state, len(all))
			return nil
		}
	}
	if len(c.pins) == 0 {
		fmt.Fprintln(out, "no upstream tool is pinned yet (configure [servers.NAME] and let a client list the tools)")
		return nil
	}
	sort.Slice(c.pins, func(i, j int) bool { return c.pins[i].Name < c.pins[j].Name })
	dir, err := c.m.dataDir()
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tSTATE\tPINNED\tNEW\tSAYS IT IS")
	unmarked, tools := 0, 0
	for _, p := range c.pins {
		says := "the server's identity"
		if p.Tool != projections.IdentityTool {
			tools++
			says = toolSays(p, dir.Descriptors())
			if !strings.Contains(says, "read-only") {
				unmarked++ // what does not say it only reads needs approval
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.Name, p.State, short12(p.Hash), short12(p.Pending), says)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range c.pins {
		if p.Pending != "" && p.Findings != "" {
			fmt.Fprintf(out, "\n%s is %s by the guard:\n%s", p.Name, p.State, findingLines(p.Findings))
		}
	}
	if unmarked > 0 {
		fmt.Fprintf(out, "\n%d of %d tools do not say they are read-only (annotation readOnlyHint): each call of them needs approval, unless\n"+
			"[servers.NAME] read_only = [\"pattern\"] names those that only read, or approval = { \"pattern\" = \"never\" } waives it.\n", unmarked, tools)
	}
	return nil
}

// toolSays is what p's descriptor says of the tool (its annotations'
// hints), read whole from dir when the log keeps it cut (a descriptor over
// 4 KiB); "?" when neither can be read.
func toolSays(p projections.Pin, dir string) string {
	hash := p.Hash
	if hash == "" { // held on first sight: the descriptor waiting
		hash, p.Descriptor = p.Pending, p.PendingDescriptor
	}
	p.Descriptor, _ = projections.WholeDescriptor(dir, hash, p.Descriptor)
	if hints := projections.AnnotationHints(p.Annotations()); hints != nil {
		return strings.Join(hints, ", ")
	}
	return "?"
}

// diff prints a changed tool's descriptor diff and how to accept it.
func (c *toolsCmd) diff(name string) error {
	p, err := c.find(name)
	if err != nil {
		return err
	}
	out := c.m.Stdout
	if p.Pending == "" {
		fmt.Fprintf(out, "%s is as pinned (%s): nothing to accept\n", p.Name, short12(p.Hash))
		return nil
	}
	dir, err := c.m.dataDir()
	if err != nil {
		return err
	}
	diff, whole := projections.DescriptorDiff(p, dir.Descriptors())
	if p.Findings != "" {
		fmt.Fprintf(out, "the guard found (%s):\n%s\n", p.State, findingLines(p.Findings))
	}
	fmt.Fprint(out, diff)
	if !whole {
		fmt.Fprintf(out, "\nnote: a descriptor above is cut (it is longer than the log keeps and was not kept whole): it cannot be accepted\n")
		return nil
	}
	fmt.Fprintf(out, "\nto pin the new descriptor: tracebridge tools accept %s --hash %s\n", p.Name, short12(p.Pending))
	return nil
}

// accept pins a changed tool's new descriptor, bound to what the operator
// reviewed: the hash `tools diff` printed. A descriptor that changed again
// since is refused.
func (c *toolsCmd) accept(ctx context.Context, node interface{ Close() error }, name string) error {
	p, err := c.find(name)
	if err != nil {
		return err
	}
	if p.Pending == "" {
		return fmt.Errorf("%s: %s has no changed descriptor waiting (state %s)", events.CodeNotPending, p.Name, p.State)
	}
	if len(c.hash) < 12 {
		return usageError{fmt.Sprintf("accept needs --hash, the hash `tracebridge tools diff %s` printed (12 digits or more): what you accept is what you reviewed", p.Name)}
	}
	if !strings.HasPrefix(p.Pending, strings.ToLower(c.hash)) {
		return fmt.Errorf("%s: %s changed again since the diff you reviewed (it now waits as %s): run `tracebridge tools diff %s` again", events.CodeHashChanged, p.Name, short12(p.Pending), p.Name)
	}
	dir, err := c.m.dataDir()
	if err != nil {
		return err
	}
	if _, whole := projections.DescriptorDiff(p, dir.Descriptors()); !whole {
		return fmt.Errorf("%s: the new descriptor of %s cannot be shown whole, so it cannot be accepted (remove the tool with [servers.NAME] deny, or ask the server's maintainer)", events.CodeHashChanged, p.Name)
	}
	node.Close()
	// Writing needs the hub: this process becomes it when none runs.
	w, err := c.m.open(ctx, hub.Elect, "tools")
	if err != nil {
		return err
	}
	defer w.Close()
	return acceptTool(ctx, c.m, w, p, c.reason)
}

// acceptTool records an operator's acceptance of p's pending descriptor.
func acceptTool(ctx context.Context, m *Main, node events.Appender, p projections.Pin, reason string) error {
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
	em.Emit(projections.Acceptance(em.NewID(), p, by, reason))
	if err := em.Close(ctx); err != nil {
		return errors.New("the acceptance was not recorded: " + err.Error())
	}
	fmt.Fprintf(m.Stdout, "accepted %s: %s is pinned now (was %s)\n", p.Name, short12(p.Pending), short12(p.Hash))
	return nil
}

func short12(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// findingLines is the guard's findings (JSON) one per line: rule, why and
// the text that triggered it.
func findingLines(findings string) string {
	var fs []struct{ Rule, Why, Trigger, Where string }
	if json.Unmarshal([]byte(findings), &fs) != nil {
		return "  " + findings + "\n"
	}
	var b strings.Builder
	for _, f := range fs {
		fmt.Fprintf(&b, "  %s: %s", f.Rule, f.Why)
		if f.Trigger != "" {
			fmt.Fprintf(&b, " — %q", f.Trigger)
		}
		b.WriteString("\n")
	}
	return b.String()
}
