package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"text/tabwriter"
)

// runReviews lists the workspace's review versions or prints one.
func runReviews(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("reviews")
	asJSON := fs.Bool("json", false, "print JSON (show: the version with its references checked)")
	if err := m.parse(fs, "reviews list [--json]\n       tracebridge reviews show [VERSION] [--json]\n\nThe reviews an AI client presented in the workspace of the working directory,\none version per presentation. list summarises them (no content); show prints one\nversion's markdown (the newest when VERSION is left out) and, on stderr, the\nreferences that do not resolve in the workspace.", args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("reviews", rest, "want list or show [VERSION]"); err != nil {
		return err
	}
	hc, done, err := m.hostClient(ctx)
	if err != nil {
		return err
	}
	defer done()
	switch {
	case rest[0] == "list" && len(rest) == 1:
		list, err := hc.Reviews(ctx)
		if err != nil {
			return err
		}
		if *asJSON {
			return json.NewEncoder(m.Stdout).Encode(list)
		}
		if len(list) == 0 {
			fmt.Fprintln(m.Stdout, "no review yet")
			return nil
		}
		tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "VERSION\tPRESENTED\tMODE\tSECTION\tBYTES\tREFS\tBROKEN")
		for i := len(list) - 1; i >= 0; i-- { // newest first
			v := list[i]
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%d\t%d\t%d\n", v.Version, v.Time.Local().Format("2006-01-02 15:04:05"), v.Mode, orDash(v.Section), v.Bytes, v.Refs, v.BrokenRefs)
		}
		return tw.Flush()
	case rest[0] == "show" && len(rest) <= 2:
		n := 0
		if len(rest) == 2 {
			if n, err = strconv.Atoi(rest[1]); err != nil || n < 1 {
				return usageError{fmt.Sprintf("VERSION %q: want a version number (see `tracebridge reviews list`)", rest[1])}
			}
		}
		v, err := hc.Review(ctx, n)
		if err != nil {
			return err
		}
		if *asJSON {
			enc := json.NewEncoder(m.Stdout)
			enc.SetIndent("", "  ")
			return enc.Encode(v)
		}
		fmt.Fprint(m.Stdout, v.Content)
		if len(v.Content) > 0 && v.Content[len(v.Content)-1] != '\n' {
			fmt.Fprintln(m.Stdout)
		}
		for _, r := range v.Refs {
			if !r.OK {
				fmt.Fprintf(m.Stderr, "broken reference %s: %s\n", r.Text, r.Problem)
			}
		}
		return nil
	}
	return usageError{fmt.Sprintf("unknown or incomplete action %q", rest)}
}
