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

const toolsHelp = `tools list [--state pinned|changed|removed] [--json]
       tracebridge tools diff TOOL
       tracebridge tools accept TOOL --hash HASH [--reason TEXT]

The tools of upstream MCP servers ([servers.NAME] in tracebridge.toml) are
pinned: the first time the bridge sees a tool, the hash of its descriptor (name,
title, description, input and output schemas, annotations) is recorded. When a
server later lists the tool with another descriptor — a rug pull, or a poisoned
description — every call of it is refused with ToolChanged until an operator
looks at the change and accepts it.

  list     every pinned tool: its catalog name, state and hash
  diff     what changed: the pinned descriptor against the new one
  accept   pin the new descriptor you reviewed: --hash is the hash diff printed;
           a descriptor that changed since is refused (HashChanged), and one
           that cannot be shown whole cannot be accepted

TOOL is the catalog name (server__tool) or server/tool.`

func runTools(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("tools")
	asJSON := fs.Bool("json", false, "list as JSON")
	state := fs.String("state", "", "list only tools in this `STATE` (pinned, changed, removed)")
	reason := fs.String("reason", "", "why (recorded with the acceptance)")
	hash := fs.String("hash", "", "accept only this pending `HASH` (as `tools diff` printed it)")
	if err := m.parse(fs, toolsHelp, args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError{"want list, diff TOOL or accept TOOL"}
	}
	switch *state {
	case "", projections.PinPinned, projections.PinChanged, projections.PinRemoved:
	default:
		return usageError{fmt.Sprintf("--state %q: want pinned, changed or removed", *state)}
	}
	node, err := m.openLog(ctx, "tools")
	if err != nil {
		return err
	}
	defer node.Close()
	rows, err := node.View(ctx, projections.Query{View: "pins", Status: *state, Limit: 1 << 20})
	if err != nil {
		return err
	}
	var pins []projections.Pin
	for _, r := range rows {
		var p projections.Pin
		if json.Unmarshal(r, &p) == nil {
			pins = append(pins, p)
		}
	}
	find := func(name string) (projections.Pin, error) {
		for _, p := range pins {
			if p.Name == name || projections.PinKey(p.Server, p.Tool) == name {
				return p, nil
			}
		}
		return projections.Pin{}, fmt.Errorf("no pinned tool is called %q (see `tracebridge tools list`)", name)
	}
	switch rest[0] {
	case "list":
		if len(rest) != 1 {
			return usageError{"list takes no arguments"}
		}
		if *asJSON {
			enc := json.NewEncoder(m.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(pins)
		}
		if len(pins) == 0 && *state != "" {
			all, err := node.View(ctx, projections.Query{View: "pins", Limit: 1 << 20})
			if err == nil && len(all) > 0 {
				fmt.Fprintf(m.Stdout, "no pinned tool is %s (%d pinned: tracebridge tools list)\n", *state, len(all))
				return nil
			}
		}
		if len(pins) == 0 {
			fmt.Fprintln(m.Stdout, "no upstream tool is pinned yet (configure [servers.NAME] and let a client list the tools)")
			return nil
		}
		sort.Slice(pins, func(i, j int) bool { return pins[i].Name < pins[j].Name })
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tSTATE\tPINNED\tNEW")
		for _, p := range pins {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.Name, p.State, short12(p.Hash), short12(p.Pending))
		}
		return tw.Flush()
	case "diff":
		if len(rest) != 2 {
			return usageError{"diff takes one tool (see `tracebridge tools list`)"}
		}
		p, err := find(rest[1])
		if err != nil {
			return err
		}
		if p.Pending == "" {
			fmt.Fprintf(m.Stdout, "%s is as pinned (%s): nothing to accept\n", p.Name, short12(p.Hash))
			return nil
		}
		dir, err := m.dataDir()
		if err != nil {
			return err
		}
		diff, whole := projections.DescriptorDiff(p, dir.Descriptors())
		fmt.Fprint(m.Stdout, diff)
		if !whole {
			fmt.Fprintf(m.Stdout, "\nnote: a descriptor above is cut (it is longer than the log keeps and was not kept whole): it cannot be accepted\n")
			return nil
		}
		fmt.Fprintf(m.Stdout, "\nto pin the new descriptor: tracebridge tools accept %s --hash %s\n", p.Name, short12(p.Pending))
		return nil
	case "accept":
		if len(rest) != 2 {
			return usageError{"accept takes one tool (see `tracebridge tools list --state changed`)"}
		}
		p, err := find(rest[1])
		if err != nil {
			return err
		}
		if p.Pending == "" {
			return fmt.Errorf("%s: %s has no changed descriptor waiting (state %s)", events.CodeNotPending, p.Name, p.State)
		}
		// Bound to what the operator reviewed: the hash `tools diff`
		// printed. A descriptor that changed again since is refused.
		if len(*hash) < 12 {
			return usageError{fmt.Sprintf("accept needs --hash, the hash `tracebridge tools diff %s` printed (12 digits or more): what you accept is what you reviewed", p.Name)}
		}
		if !strings.HasPrefix(p.Pending, strings.ToLower(*hash)) {
			return fmt.Errorf("%s: %s changed again since the diff you reviewed (it now waits as %s): run `tracebridge tools diff %s` again", events.CodeHashChanged, p.Name, short12(p.Pending), p.Name)
		}
		dir, err := m.dataDir()
		if err != nil {
			return err
		}
		if _, whole := projections.DescriptorDiff(p, dir.Descriptors()); !whole {
			return fmt.Errorf("%s: the new descriptor of %s cannot be shown whole, so it cannot be accepted (remove the tool with [servers.NAME] deny, or ask the server's maintainer)", events.CodeHashChanged, p.Name)
		}
		node.Close()
		// Writing needs the hub: this process becomes it when none runs.
		w, err := m.open(ctx, hub.Elect, "tools")
		if err != nil {
			return err
		}
		defer w.Close()
		return acceptTool(ctx, m, w, p, *reason)
	}
	return usageError{fmt.Sprintf("unknown action %q: want list, diff or accept", rest[0])}
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
