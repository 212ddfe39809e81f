package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os/user"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/tracebridge/tracebridge/bridge/host"
)

func jsonMarshal(v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v)
}

// parseFocus reads FILE[:LINE[:COL[-LINE:COL]]].
func parseFocus(s string) (host.Focus, error) {
	f := host.Focus{Path: s}
	file, pos, ok := strings.Cut(s, ":")
	if !ok {
		return f, nil
	}
	f.Path = file
	start, end, ranged := strings.Cut(pos, "-")
	num := func(s string) (int, error) {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, fmt.Errorf("%q is not a positive line or column", s)
		}
		return n, nil
	}
	lc := strings.Split(start, ":")
	var err error
	if f.StartLine, err = num(lc[0]); err != nil {
		return f, err
	}
	f.StartCol = 1
	if len(lc) > 1 {
		if f.StartCol, err = num(lc[1]); err != nil {
			return f, err
		}
	}
	if ranged {
		el, ec, ok := strings.Cut(end, ":")
		if !ok {
			return f, fmt.Errorf("the end of a selection is LINE:COL")
		}
		if f.EndLine, err = num(el); err != nil {
			return f, err
		}
		if f.EndCol, err = num(ec); err != nil {
			return f, err
		}
	}
	return f, nil
}

func runFocus(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("focus")
	if err := m.parse(fs, "focus FILE[:LINE[:COL[-LINE:COL]]]\n\nTells the running workspace host which file is the active document and,\nwith a range, what is selected: what get_active_document and get_selection\nreturn to the AI client. FILE is relative to the host's --root, or an absolute\npath inside it (as editors give it).", args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageError{"want one FILE[:LINE[:COL[-LINE:COL]]]"}
	}
	f, err := parseFocus(fs.Arg(0))
	if err != nil {
		return usageError{err.Error()}
	}
	if _, err := m.hostCall(ctx, "set_focus", f); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "focus: %s\n", fs.Arg(0))
	return nil
}

func runProposals(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("proposals")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := m.parse(fs, "proposals list [--json]\n       tracebridge proposals show ID\n       tracebridge proposals approve ID\n       tracebridge proposals reject ID\n       tracebridge proposals reset\n\nEdits an AI client proposes wait here. approve applies the edit at once, and\nonly if every file still has the content it was proposed against (else\nDrift) and each original text occurs exactly once (else Ambiguous); a set of\nfiles is applied whole or not at all. The decision is bound to the content\nhash shown by show. reset rejects everything not yet applied.", args); err != nil {
		return err
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return usageError{"want list, show ID, approve ID, reject ID or reset"}
	}
	resp, err := m.hostCall(ctx, "proposals.list", nil)
	if err != nil {
		return err
	}
	var list []host.Proposal
	if err := json.Unmarshal(resp.Payload, &list); err != nil {
		return err
	}
	find := func(id string) (*host.Proposal, error) {
		for i := range list {
			if list[i].ID == id {
				return &list[i], nil
			}
		}
		return nil, fmt.Errorf("no proposal %s (see `tracebridge proposals list`)", id)
	}
	switch {
	case rest[0] == "list" && len(rest) == 1:
		if *asJSON {
			return json.NewEncoder(m.Stdout).Encode(list)
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tFILES\tCODE")
		for _, p := range list {
			var files []string
			for _, f := range p.Files {
				files = append(files, f.Path)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", p.ID, p.State, strings.Join(files, ","), p.Code)
		}
		return tw.Flush()
	case rest[0] == "show" && len(rest) == 2:
		if _, err := find(rest[1]); err != nil {
			return err
		}
		resp, err := m.hostCall(ctx, "proposals.show", host.ShowArgs{ID: rest[1]})
		if err != nil {
			return err
		}
		var p host.Proposal
		if err := json.Unmarshal(resp.Payload, &p); err != nil {
			return err
		}
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&p)
	case (rest[0] == "approve" || rest[0] == "reject") && len(rest) == 2:
		p, err := find(rest[1])
		if err != nil {
			return err
		}
		by := "operator"
		if u, err := user.Current(); err == nil {
			by = "operator:" + u.Username
		}
		resp, err := m.hostCall(ctx, "proposals.decide", host.DecideArgs{ID: p.ID, Approve: rest[0] == "approve", ContentHash: p.ContentHash, By: by})
		if err != nil {
			return err
		}
		var done host.Proposal
		json.Unmarshal(resp.Payload, &done)
		fmt.Fprintf(m.Stdout, "%s: %s", done.ID, done.State)
		if done.Code != "" {
			fmt.Fprintf(m.Stdout, " (%s: %s)", done.Code, done.Message)
		}
		fmt.Fprintln(m.Stdout)
		if done.State == host.Failed {
			return errFound
		}
		return nil
	case rest[0] == "reset" && len(rest) == 1:
		resp, err := m.hostCall(ctx, "proposals.reset", nil)
		if err != nil {
			return err
		}
		fmt.Fprintf(m.Stdout, "reset: %s\n", resp.Payload)
		return nil
	}
	return usageError{fmt.Sprintf("unknown or incomplete action %q", strings.Join(rest, " "))}
}
