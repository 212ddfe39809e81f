package export

import (
	"fmt"
	"strings"

	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/replay"
)

// Markdown renders a run as a review document: the verdict, the timeline
// as a table and the sequence diagram.
func Markdown(run replay.Run, timings bool) string {
	var b strings.Builder
	label := run.Tool
	if label == "" {
		label = run.Method
	}
	fmt.Fprintf(&b, "# Run %s: %s\n\n", run.RequestID, mdEscape(label))
	fmt.Fprintf(&b, "- status: **%s**\n- session: %s\n- events: %d\n", run.Status, run.SessionID, len(run.Events))
	if v := run.Verdict; run.Status != replay.StatusOK {
		fmt.Fprintf(&b, "- verdict: `%s` at **%s** (%s): %s\n- action: %s\n", orNone(string(v.Code)), v.Boundary, v.Kind, mdEscape(v.Message), mdEscape(v.Action))
	} else {
		b.WriteString("- verdict: every step succeeded\n")
	}
	b.WriteString("\n## Timeline\n\n| # | seq | boundary | kind | from → to | outcome | code | ms |\n|---|---|---|---|---|---|---|---|\n")
	for i := range run.Events {
		e := &run.Events[i]
		fmt.Fprintf(&b, "| %d | %d | %s | %s | %s → %s | %s | %s | %.3f |\n", i+1, e.Seq, e.Boundary, mdEscape(e.Kind),
			mdEscape(e.From), mdEscape(e.To), e.Outcome, mdEscape(string(e.Code)), e.DurationMs)
	}
	b.WriteString("\n## Sequence\n\n```mermaid\n")
	b.WriteString(mermaid.Sequence(run.Events, mermaid.Options{Timings: timings}))
	b.WriteString("```\n")
	return b.String()
}

// mdEscape keeps text inside a table cell or a list item: no pipes, no
// new lines, no HTML, no code fences.
func mdEscape(s string) string {
	r := strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ", "<", "&lt;", ">", "&gt;", "`", "'")
	return r.Replace(s)
}

// orNone is s, or "-" when it is empty: how a missing value reads in a
// table or a timeline.
func orNone(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
