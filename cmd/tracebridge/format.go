package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
)

// columns are the widths of the boundary, kind and From→To columns: the
// catalog's longest, so every line's outcome starts in the same column.
var columns = func() (c struct{ boundary, kind, parties int }) {
	for _, k := range events.Kinds() {
		c.boundary = max(c.boundary, utf8.RuneCountInString(string(k.Boundary)))
		c.kind = max(c.kind, utf8.RuneCountInString(k.Kind))
		c.parties = max(c.parties, utf8.RuneCountInString(k.From+"→"+k.To))
	}
	return c
}()

// writeEventLine prints one event as a line a person reads:
//
//	seq  time  boundary  kind  From→To  outcome  code  req=…  k=v…
func writeEventLine(w io.Writer, e *events.Event) {
	var b strings.Builder
	fmt.Fprintf(&b, "%7d %s %-*s %-*s %-*s %-7s", e.Seq, e.Time.Format("15:04:05.000"), columns.boundary, e.Boundary, columns.kind, e.Kind,
		columns.parties, e.From+"→"+e.To, e.Outcome)
	if e.Code != "" {
		fmt.Fprintf(&b, " code=%s", e.Code)
	}
	if !e.RequestID.IsZero() {
		fmt.Fprintf(&b, " req=%s", e.RequestID)
	}
	keys := make([]string, 0, len(e.Attrs))
	for k := range e.Attrs.All() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := e.Attrs.Get(k)
		if len(v) > 60 {
			v = v[:57] + "…"
		}
		fmt.Fprintf(&b, " %s=%q", k, v)
	}
	b.WriteByte('\n')
	io.WriteString(w, b.String())
}
