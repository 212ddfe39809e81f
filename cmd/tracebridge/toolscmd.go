package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/user"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/projections/hub"
)

const toolsHelp = `tools list [--state pinned|changed|removed] [--json]
       tracebridge tools diff TOOL
       tracebridge tools accept TOOL [--reason TEXT]

The tools of upstream MCP servers ([servers.NAME] in tracebridge.toml) are
pinned: the first time the bridge sees a tool, the hash of its descriptor (name,
title, description, input and output schemas, annotations) is recorded. When a
server later lists the tool with another descriptor — a rug pull, or a poisoned
description — every call of it is refused with ToolChanged until an operator
looks at the change and accepts it.

  list     every pinned tool: its catalog name, state and hash
  diff     what changed: the pinned descriptor against the new one
  accept   pin the new descriptor (recorded as upstream.tool.accepted)

TOOL is the catalog name (server__tool) or server/tool.`

func runTools(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("tools")
	asJSON := fs.Bool("json", false, "list as JSON")
	state := fs.String("state", "", "list only tools in this `STATE` (pinned, changed, removed)")
	reason := fs.String("reason", "", "why (recorded with the acceptance)")
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
		if len(pins) == 0 {
			fmt.Fprintln(m.Stdout, "no upstream tool is pinned yet (configure [servers.NAME] and let a client list the tools)")
			return nil
		}
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
		fmt.Fprint(m.Stdout, upstream.DescriptorDiff(p))
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
	em.Emit(upstream.Acceptance(em.NewID(), p, by, reason))
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
