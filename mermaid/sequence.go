package mermaid

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// Options shapes a diagram. The zero value gives the deterministic form.
type Options struct {
	// Timings adds each event's offset from the first, in ms.
	Timings bool
}

// other stands for a participant the catalog does not know: producers
// cannot add names to a diagram.
const other = "Other"

// noteAttrs are the attributes shown as notes under decisions and failures,
// in this order.
var noteAttrs = []string{"reason", "error"}

// Sequence renders evs (ordered by seq) as a sequence diagram.
func Sequence(evs []events.Event, opts Options) string {
	var b strings.Builder
	b.WriteString("sequenceDiagram\n")
	writeParticipants(&b, evs)
	failed := -1
	for i := range evs {
		if evs[i].Outcome.Failed() {
			failed = i
			break
		}
	}
	// Consecutive identical arrows without notes (an upstream pinning its
	// tools) are drawn once, with their count.
	pending, repeat := "", 0
	flush := func() {
		if pending == "" {
			return
		}
		if repeat > 1 {
			pending = strings.TrimSuffix(pending, "\n") + escape(fmt.Sprintf(" ×%d", repeat)) + "\n"
		}
		b.WriteString(pending)
		pending, repeat = "", 0
	}
	for i := range evs {
		line, note := arrowOf(evs, i, opts)
		if i != failed && note == "" && line == pending {
			repeat++
			continue
		}
		flush()
		switch {
		case i == failed:
			b.WriteString("    rect rgb(255, 228, 225)\n")
			b.WriteString(line + note)
			b.WriteString("    end\n")
		case note != "":
			b.WriteString(line + note)
		default:
			pending, repeat = line, 1
		}
	}
	flush()
	return b.String()
}

// writeParticipants declares the participants evs uses, in the canonical
// order, one per upstream server (in name order) where Upstream stands.
func writeParticipants(b *strings.Builder, evs []events.Event) {
	present := map[string]bool{}
	var upstreams []string
	for i := range evs {
		for _, p := range []string{participantOf(&evs[i], evs[i].From), participantOf(&evs[i], evs[i].To)} {
			if !present[p] && strings.HasPrefix(p, events.Upstream+"_") {
				upstreams = append(upstreams, p)
			}
			present[p] = true
		}
	}
	slices.Sort(upstreams)
	for _, p := range append(slices.Clone(events.Participants), other) {
		if p == events.Upstream {
			for _, u := range upstreams {
				fmt.Fprintf(b, "    participant %s as %s\n", u, strings.Replace(u, "_", " ", 1))
			}
		}
		if present[p] {
			fmt.Fprintf(b, "    participant %s\n", p)
		}
	}
}

// arrowOf is event i's arrow, and the note under it for a failure, a
// policy decision or an approval (its first note attribute).
func arrowOf(evs []events.Event, i int, opts Options) (line, note string) {
	e := &evs[i]
	from, to := participantOf(e, e.From), participantOf(e, e.To)
	label := e.Kind
	if e.Outcome != "" && e.Outcome != events.OK {
		label += " " + string(e.Outcome)
	}
	if e.Code != "" {
		label += " " + string(e.Code)
	}
	if t := e.Attrs.Get(events.AttrTool); t != "" && (e.Kind == events.KindMCPRequestReceived || e.Kind == events.KindExecutorStarted) {
		label += " " + t
	}
	if opts.Timings && !e.Time.IsZero() {
		label += fmt.Sprintf(" +%.1fms", events.Ms(e.Time.Sub(evs[0].Time)))
	}
	arrow := "->>"
	if e.Outcome.Failed() {
		arrow = "-x"
	}
	line = fmt.Sprintf("    %s%s%s: %s\n", from, arrow, to, escape(label))
	info, _ := events.Lookup(e.Kind)
	if e.Outcome.Failed() || info.Boundary == events.BoundaryPolicy || info.Boundary == events.BoundaryApproval {
		for _, k := range noteAttrs {
			if v := e.Attrs.Get(k); v != "" {
				return line, fmt.Sprintf("    Note over %s: %s\n", to, escape(truncate(v, 120)))
			}
		}
	}
	return line, ""
}

// participantOf is p's participant in the diagram: Upstream is drawn once
// per server, as Upstream_<server> (letters and digits of the event's
// server attribute only, so a name can never add syntax).
func participantOf(e *events.Event, p string) string {
	p = participant(p)
	if p != events.Upstream {
		return p
	}
	var b strings.Builder
	for _, r := range e.Attrs.Get(events.AttrServer) {
		if (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
		if b.Len() >= 32 {
			break
		}
	}
	if b.Len() == 0 {
		return p
	}
	return events.Upstream + "_" + b.String()
}

func participant(p string) string {
	if slices.Contains(events.Participants, p) {
		return p
	}
	return other
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	// End at a word when one ends in the last quarter: a note reads better
	// cut between words than inside one.
	if sp := strings.LastIndexByte(s[:cut], ' '); sp > n*3/4 {
		cut = sp
	}
	return s[:cut] + "…"
}

// escape keeps letters, digits, spaces and . _ / ( ) , = + - as they are and
// writes every other character as a Mermaid entity (#<code>;), so a label is
// always one inert piece of text.
func escape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9',
			r == ' ', r == '.', r == '_', r == '/', r == '(', r == ')', r == ',', r == '=', r == '+':
			b.WriteRune(r)
		case r == '-':
			b.WriteString("#45;") // "->>" inside a label must not read as an arrow
		default:
			fmt.Fprintf(&b, "#%d;", r)
		}
	}
	return b.String()
}
