package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// writeEventLine prints one event as a line a person reads:
//
//	seq  time  boundary  kind  From→To  outcome  code  req=…  k=v…
func writeEventLine(w io.Writer, e *events.Event) {
	var b strings.Builder
	fmt.Fprintf(&b, "%7d %s %-9s %-26s %-20s %-7s", e.Seq, e.Time.Format("15:04:05.000"), e.Boundary, e.Kind,
		e.From+"→"+e.To, e.Outcome)
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
