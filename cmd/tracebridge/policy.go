package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/bridge/whatif"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/policy"
)

const policyHelp = `policy test --config NEW.toml [--since 30d|TIME] [--archive DIR] [--format text|json|junit] [--all]
       tracebridge policy explain REQUEST_ID [--config FILE]
       tracebridge policy pack [--format text|json]

test re-decides every tool call recorded in the log under the policy of
NEW.toml — its [policy] grants, denials and rules ([policy.rules.NAME]), its
approval settings, and the guard's rule pack as NEW.toml sets it ([guard],
[servers.NAME] guard) — without running anything, and prints the calls whose
outcome would change (allowed, gated: needs an operator's approval, denied),
grouped by the rule that changes them, with counts. It exits 1 when any would
change, so CI can check a policy change against recorded sessions:
tracebridge --data DIR session replay FILE, then policy test --config NEW.toml.
--archive DIR reads the archived calls too (tracebridge archive), verified
against this data dir's key first.
--format json writes the report as one object; junit one test case per group
of changes (failing) and one for the calls that keep their outcome.

explain shows what the rules make of one recorded call: for each rule, whether
it applies to the tool, matched, or could not be evaluated; what was decided
when the call was made (the rule, the policy version); what the policy of
--config (default: the one tracebridge mcp uses) decides now.

Results are re-judged too: each recorded upstream result (as the log kept it,
redacted) meets NEW.toml's guard actions and its rules with phase = "result";
those it would block, redact or flag otherwise than they were are listed.

pack lists the guard's shipped rule pack: each rule's id, what it judges
(descriptor, result, args), its default action, the actions it takes, and
why it exists. Turn one off with [guard] off = ["ID"], or change its action
with [guard.actions] or [servers.NAME] guard = { ID = "flag" } (docs/GUARD.md).

The rules see the arguments as the log recorded them, redacted: a rule on a
secret's value decides otherwise here than it did live.`

func runPolicy(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("policy")
	cfgFlag := fs.String("config", "", "the candidate tracebridge.toml `FILE` (test: required; explain: default the one tracebridge mcp uses)")
	since := fs.String("since", "", "test: only calls since this `TIME` (RFC 3339, or a duration ago such as 30d)")
	format := fs.String("format", "text", "test: `FORMAT` of the report: text, json or junit")
	all := fs.Bool("all", false, "test: list every changed call (default: the first 20)")
	archive := fs.String("archive", "", "test: also the calls archived in `DIR` (see `tracebridge archive`)")
	if err := m.parse(fs, policyHelp, args); err != nil {
		return err
	}
	rest := fs.Args()
	if err := verbOf("policy", rest, "want test --config NEW.toml, explain REQUEST_ID or pack"); err != nil {
		return err
	}
	switch {
	case rest[0] == "test" && len(rest) == 1:
		if *cfgFlag == "" {
			return usageError{"policy test needs --config NEW.toml: the candidate policy to try on the recorded calls"}
		}
		switch *format {
		case "text", "json", "junit":
		default:
			return usageError{fmt.Sprintf("--format %q: want text, json or junit", *format)}
		}
		var cutoff time.Time
		if *since != "" {
			if d, err := config.ParseDuration(*since); err == nil {
				cutoff = m.Now().Add(-d)
			} else if t, err := time.Parse(time.RFC3339, *since); err == nil {
				cutoff = t
			} else {
				return usageError{fmt.Sprintf("--since %q: want an RFC 3339 time or a duration (24h, 30d)", *since)}
			}
		}
		return m.policyTest(ctx, *cfgFlag, whatif.Options{Since: cutoff, Archive: *archive}, *format, *all)
	case rest[0] == "explain" && len(rest) == 2:
		return m.policyExplain(ctx, rest[1], *cfgFlag)
	case rest[0] == "pack" && len(rest) == 1:
		return m.policyPack(*format)
	}
	return usageError{fmt.Sprintf("unknown action %q: want test --config NEW.toml, explain REQUEST_ID or pack", strings.Join(rest, " "))}
}

// shownChanges is how many changed calls policy test lists without --all.
const shownChanges = 20

func (m *Main) policyTest(ctx context.Context, cfgPath string, opts whatif.Options, format string, all bool) error {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return err
	}
	node, err := m.openLog(ctx, "policy")
	if err != nil {
		return err
	}
	defer node.Close()
	if opts.Annotations, opts.Schemas, err = whatif.Pinned(ctx, node); err != nil {
		return err
	}
	if opts.Archive != "" {
		dir, err := m.dataDir()
		if err != nil {
			return err
		}
		if opts.Trusted, err = dir.PublicKey(); err != nil {
			return err
		}
	}
	r, err := whatif.Test(ctx, node, cfg, opts)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	case "junit":
		if err := policyReport(r, cfgPath).Write(m.Stdout); err != nil {
			return err
		}
	default:
		writePolicyReport(m, r, cfgPath, all)
	}
	if len(r.Changed) > 0 || len(r.Results) > 0 {
		return errFound
	}
	return nil
}

func writePolicyReport(m *Main, r *whatif.Report, cfgPath string, all bool) {
	out := m.Stdout
	fmt.Fprintf(out, "%d recorded tool calls re-decided under %s (policy version %s) in %.0f ms: %d would change\n",
		r.Calls, cfgPath, r.Version, r.ElapsedMs, len(r.Changed))
	if r.Unreadable > 0 {
		fmt.Fprintf(out, "%d calls left out: their envelope could not be read back (a payload the log or archive no longer holds)\n", r.Unreadable)
	}
	defer writeResultChanges(out, r, all)
	if len(r.Changed) == 0 {
		return
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRULE\tCHANGE\tCALLS")
	for _, g := range r.Groups {
		fmt.Fprintf(tw, "%s\t%s → %s\t%d\n", g.Rule, g.From, g.To, g.Calls)
	}
	tw.Flush()
	tw = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nREQUEST\tTIME\tTOOL\tWAS\tWOULD BE\tWHY")
	for i, c := range r.Changed {
		if i == shownChanges && !all {
			tw.Flush()
			fmt.Fprintf(out, "… and %d more (--all lists them; `tracebridge policy explain REQUEST` explains one)\n", len(r.Changed)-shownChanges)
			return
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.RequestID, c.Time.Local().Format("2006-01-02 15:04"), c.Tool, c.Was.Verdict, c.Would.Verdict, c.Would.Reason)
	}
	tw.Flush()
}

// writeResultChanges lists the recorded results the candidate's guard
// would judge otherwise.
func writeResultChanges(out io.Writer, r *whatif.Report, all bool) {
	if len(r.Results) == 0 {
		return
	}
	fmt.Fprintf(out, "\n%d recorded upstream results the guard would judge otherwise (block, redact, flag; - for nothing):\n", len(r.Results))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REQUEST\tTOOL\tWAS\tWOULD BE\tRULE\tWHY")
	for i, c := range r.Results {
		if i == shownChanges && !all {
			fmt.Fprintf(tw, "… and %d more (--all lists them)\n", len(r.Results)-shownChanges)
			break
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.RequestID, c.Tool, orDash(c.Was), orDash(c.Would), c.Rule, c.Why)
	}
	tw.Flush()
}

// policyReport is a policy test as JUnit: a failing case per group of
// changes, and a passing one for the calls that keep their outcome.
func policyReport(r *whatif.Report, cfgPath string) *export.JUnit {
	s := export.Suite{Name: "policy test " + cfgPath, Time: r.ElapsedMs / 1000}
	changed := 0
	for _, g := range r.Groups {
		changed += g.Calls
		var ids []string
		for _, c := range r.Changed {
			if cg := c.Group(); cg.Rule == g.Rule && cg.From == g.From && cg.To == g.To && len(ids) < shownChanges {
				ids = append(ids, c.RequestID.String()+" "+c.Tool)
			}
		}
		s.Add(export.Case{Name: fmt.Sprintf("%s: %s → %s", g.Rule, g.From, g.To), Classname: "policy",
			Failure: &export.Problem{Message: fmt.Sprintf("%d recorded calls would be %s instead of %s", g.Calls, g.To, g.From), Type: "PolicyChange",
				Text: strings.Join(ids, "\n")}})
	}
	if n := len(r.Results); n > 0 {
		s.Add(export.Case{Name: "results judged otherwise", Classname: "policy",
			Failure: &export.Problem{Message: fmt.Sprintf("%d recorded upstream results would be judged otherwise by the guard", n), Type: "ResultChange"}})
	}
	s.Add(export.Case{Name: fmt.Sprintf("%d calls keep their outcome", r.Calls-changed), Classname: "policy"})
	return &export.JUnit{Name: "tracebridge policy test", Suites: []export.Suite{s}}
}

func (m *Main) policyExplain(ctx context.Context, idText, cfgPath string) error {
	cfg, err := m.loadConfig(cfgPath)
	if err != nil {
		return err
	}
	rs, err := cfg.Rules()
	if err != nil {
		return err
	}
	id, err := m.requestID(ctx, idText)
	if err != nil {
		return err
	}
	node, err := m.openLog(ctx, "policy")
	if err != nil {
		return err
	}
	defer node.Close()
	ann, schemas, err := whatif.Pinned(ctx, node)
	if err != nil {
		return err
	}
	evs, err := node.ByRequest(ctx, id)
	if err != nil {
		return err
	}
	var call *whatif.Call
	err = whatif.Calls(ctx, runLog{evs, node}, time.Time{}, ann, func(c whatif.Call) error { call = &c; return nil })
	if err != nil {
		return err
	}
	if call == nil {
		return fmt.Errorf("request %s is not a tool call the policy decided (see `tracebridge replay %s`)", id, id)
	}
	out := m.Stdout
	fmt.Fprintf(out, "request %s: %s at %s\n", id, call.Descriptor.ID, call.Time.Local().Format(time.RFC3339))
	args, _ := json.Marshal(call.Input.Args)
	fmt.Fprintf(out, "arguments (as recorded, redacted): %s\n", clip(string(args), 300))
	was := call.Was
	fmt.Fprintf(out, "\nthen (policy version %s): %s", orDash(was.Version), was.Verdict)
	if was.Rule != "" {
		fmt.Fprintf(out, " by rule %s", was.Rule)
	}
	fmt.Fprintf(out, "\n  %s\n", was.Reason)
	x := executor.NewEvaluator(cfg)
	x.Schemas = schemas
	now := x.Evaluate(ctx, call.Descriptor, call.Input)
	fmt.Fprintf(out, "now (policy version %s, %s): %s", now.Version, orDash(cfg.Path), now.Verdict)
	if now.Rule != "" {
		fmt.Fprintf(out, " by rule %s", now.Rule)
	}
	fmt.Fprintf(out, "\n  %s\n", now.Reason)
	printPackFindings(out, cfg, call, x.Schemas[call.Descriptor.ID])
	if would, rule, why, ok := whatif.JudgeResult(ctx, cfg, *call); ok {
		fmt.Fprintf(out, "its result, then: %s; now: %s", orDash(call.ResultWas), orDash(would))
		if rule != "" {
			fmt.Fprintf(out, " (%s: %s)", rule, why)
		}
		fmt.Fprintln(out)
	}
	results := rs.Explain(ctx, call.Input)
	if len(results) == 0 {
		fmt.Fprintln(out, "\nno [policy.rules] in that configuration")
		return nil
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nRULE\tEFFECT\tAPPLIES\tMATCHED\tWHEN")
	for _, r := range results {
		matched := fmt.Sprint(r.Matched)
		if r.Error != "" {
			matched = "error: " + r.Error
		} else if !r.Applies {
			matched = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\n", r.Name, r.Effect, r.Applies, matched, r.When)
	}
	return tw.Flush()
}

// runLog is one request's events as a whatif.Log.
type runLog struct {
	evs []events.Event
	events.PayloadReader
}

func (l runLog) Range(_ context.Context, from uint64, _ int) ([]events.Event, uint64, error) {
	if from > 1 {
		return nil, from, nil
	}
	return l.evs, 2, nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// policyPack lists the guard's rule pack.
func (m *Main) policyPack(format string) error {
	if format == "json" {
		enc := json.NewEncoder(m.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"pack": policy.Pack, "rules": policy.PackRules})
	}
	fmt.Fprintf(m.Stdout, "%s\n\n", policy.Pack)
	tw := tabwriter.NewWriter(m.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RULE\tJUDGES\tDEFAULT\tTAKES\tWHY")
	for _, r := range policy.PackRules {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ID, r.Phase, r.Default, strings.Join(r.Allowed, ", ")+", off", r.Why)
	}
	return tw.Flush()
}

// printPackFindings prints what the guard's pack finds in a recorded call's
// arguments under cfg (an upstream tool's; nothing for the bridge's own).
func printPackFindings(out io.Writer, cfg *config.Config, call *whatif.Call, schema json.RawMessage) {
	server := call.Descriptor.Server()
	if server == "" {
		return
	}
	act := func(rule string) string { return cfg.GuardAction(server, rule) }
	fs := guard.Args(guard.Call{Server: server, Tool: call.Descriptor.Name, Description: call.Descriptor.Description,
		Schema: schema, Args: call.Input.RawArgs}, act)
	fmt.Fprintf(out, "\nthe guard's pack (%s) on these arguments: ", policy.Pack)
	if len(fs) == 0 {
		fmt.Fprintln(out, "nothing found")
		return
	}
	fmt.Fprintf(out, "\n%s", findingLines(guard.JSON(fs)))
}
