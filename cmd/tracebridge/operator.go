package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/user"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/tracebridge/tracebridge/host"
)

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
	hc, done, err := m.hostClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	if _, err := hc.SetFocus(ctx, f); err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "focus: %s\n", fs.Arg(0))
	return nil
}

func runProposals(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("proposals")
	c := &proposalsCmd{m: m}
	fs.BoolVar(&c.json, "json", false, "print JSON")
	fs.StringVar(&c.state, "state", "", "list: only proposals in `STATE` (pending, approved, rejected, applied, failed)")
	fs.IntVar(&c.limit, "limit", 0, "list: at most `N`, newest first (0: all)")
	fs.IntVar(&c.limit, "n", 0, "the same as --limit")
	fs.BoolVar(&c.yes, "yes", false, "reset: do it without asking")
	if err := m.parse(fs, "proposals list [--state STATE] [--limit N|-n N] [--json]\n       tracebridge proposals show ID [--json]\n       tracebridge proposals approve ID\n       tracebridge proposals reject ID\n       tracebridge proposals skip ID\n       tracebridge proposals reset [--yes]\n\nEdits an AI client proposes wait here, newest first. show prints the diff\nthat approving would apply now (coloured on a terminal). approve applies the\nedit at once, and only if every file still has the content it was proposed\nagainst (else Drift) and each original text occurs exactly once (else\nAmbiguous); a set of files is applied whole or not at all; it prints what it\napplied. The decision is bound to the content hash shown by show. reset\nrejects everything not yet applied: it asks first (or takes --yes). skip\ndefers a decision (recorded); the proposal stays pending.", args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("proposals", rest, "want list, show ID, approve ID, reject ID, skip ID or reset"); err != nil {
		return err
	}
	hc, done, err := m.hostClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	c.host = hc
	if c.list, err = hc.Proposals(ctx); err != nil {
		return err
	}
	slices.Reverse(c.list) // newest first
	switch {
	case rest[0] == "list" && len(rest) == 1:
		return c.print()
	case rest[0] == "show" && len(rest) == 2:
		return c.show(ctx, rest[1])
	case (rest[0] == "approve" || rest[0] == "reject" || rest[0] == "skip") && len(rest) == 2:
		return c.decide(ctx, rest[1], rest[0])
	case rest[0] == "reset" && len(rest) == 1:
		return c.reset(ctx)
	}
	return usageError{fmt.Sprintf("unknown or incomplete action %q", strings.Join(rest, " "))}
}

// proposalsCmd is `proposals` over the host's list, newest first.
type proposalsCmd struct {
	m     *Main
	host  host.Client
	list  []host.Proposal
	json  bool
	state string
	limit int
	yes   bool
}

// find resolves an id or a unique prefix of one.
func (c *proposalsCmd) find(id string) (*host.Proposal, error) {
	id, err := resolveID(id, "proposal", func() ([]string, error) {
		var ids []string
		for _, p := range c.list {
			ids = append(ids, p.ID)
		}
		return ids, nil
	})
	if err != nil {
		return nil, fmt.Errorf("%v (see `tracebridge proposals list`)", err)
	}
	for i := range c.list {
		if c.list[i].ID == id {
			return &c.list[i], nil
		}
	}
	return nil, fmt.Errorf("no proposal %s (see `tracebridge proposals list`)", id)
}

func (c *proposalsCmd) print() error {
	var shown []host.Proposal
	for _, p := range c.list {
		if (c.state == "" || p.State == c.state) && (c.limit == 0 || len(shown) < c.limit) {
			shown = append(shown, p)
		}
	}
	if c.json {
		return json.NewEncoder(c.m.Stdout).Encode(shown)
	}
	if len(shown) == 0 {
		fmt.Fprintln(c.m.Stdout, "no proposals")
		return nil
	}
	tw := tabwriter.NewWriter(c.m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tCREATED\tFILES\tCODE")
	for _, p := range shown {
		var files []string
		for _, f := range p.Files {
			files = append(files, f.Path)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.ID, p.State, p.Created.Local().Format("2006-01-02 15:04:05"), strings.Join(files, ","), p.Code)
	}
	return tw.Flush()
}

// show prints what approving would apply now.
func (c *proposalsCmd) show(ctx context.Context, id string) error {
	found, err := c.find(id)
	if err != nil {
		return err
	}
	p, err := c.host.Proposal(ctx, found.ID)
	if err != nil {
		return err
	}
	if c.json {
		enc := json.NewEncoder(c.m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(&p)
	}
	c.m.printProposal(&p)
	return nil
}

// decide approves (applies) or rejects one proposal, bound to the content
// hash it was listed with.
func (c *proposalsCmd) decide(ctx context.Context, id, verb string) error {
	p, err := c.find(id)
	if err != nil {
		return err
	}
	by := "operator"
	if u, err := user.Current(); err == nil {
		by = "operator:" + u.Username
	}
	done, err := c.host.Decide(ctx, host.DecideArgs{ID: p.ID, Approve: verb == "approve", Skip: verb == "skip", ContentHash: p.ContentHash, By: by})
	if err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "%s: %s", done.ID, done.State)
	if verb == "skip" {
		fmt.Fprint(c.m.Stdout, " (decision deferred)")
	}
	if done.Code != "" {
		fmt.Fprintf(c.m.Stdout, " (%s: %s)", done.Code, done.Message)
	}
	fmt.Fprintln(c.m.Stdout)
	if done.State == host.Applied && done.Preview != "" {
		c.m.printDiff(done.Preview)
	}
	if done.State == host.Failed {
		return errFound
	}
	return nil
}

// reset rejects every proposal not yet applied, after asking (or --yes).
func (c *proposalsCmd) reset(ctx context.Context) error {
	open := 0
	for _, p := range c.list {
		if p.State == host.Pending || p.State == host.Approved {
			open++
		}
	}
	if open > 0 && !c.yes {
		if !isTerminal(c.m.Stdin) {
			return usageError{fmt.Sprintf("reset rejects %d proposal(s) not yet applied; pass --yes to confirm", open)}
		}
		fmt.Fprintf(c.m.Stdout, "reject %d proposal(s) not yet applied? [y/N] ", open)
		answer, _ := bufio.NewReader(c.m.Stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(c.m.Stdout, "nothing reset")
			return nil
		}
	}
	n, err := c.host.Reset(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.m.Stdout, "reset: {\"cleared\":%d}\n", n)
	return nil
}

// printProposal prints a proposal for a person: what it is, then its diff.
func (m *Main) printProposal(p *host.Proposal) {
	var files []string
	for _, f := range p.Files {
		files = append(files, f.Path)
	}
	fmt.Fprintf(m.Stdout, "proposal %s: %s, %s\nfiles:   %s\ncontent: %s (approving binds to it)\ncreated: %s\n",
		p.ID, p.State, orDash(string(p.Code)), strings.Join(files, ", "), p.ContentHash, p.Created.Local().Format(time.RFC3339))
	if p.Description != "" {
		fmt.Fprintf(m.Stdout, "why:     %s\n", p.Description)
	}
	if p.Message != "" {
		fmt.Fprintf(m.Stdout, "note:    %s\n", p.Message)
	}
	fmt.Fprintln(m.Stdout)
	m.printDiff(p.Preview)
}

// printDiff prints a unified diff, coloured when stdout is a terminal.
func (m *Main) printDiff(diff string) {
	color := isTerminal(m.Stdout) && m.Getenv("NO_COLOR") == ""
	for _, l := range strings.SplitAfter(diff, "\n") {
		switch {
		case !color || l == "":
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
			l = "\x1b[1m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "+"):
			l = "\x1b[32m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "-"):
			l = "\x1b[31m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		case strings.HasPrefix(l, "@@"):
			l = "\x1b[36m" + strings.TrimSuffix(l, "\n") + "\x1b[0m\n"
		}
		io.WriteString(m.Stdout, l)
	}
}

// isTerminal reports whether f is an interactive terminal (/dev/null, a
// character device too, is not).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(int(file.Fd()))
}
