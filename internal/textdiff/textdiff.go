// Package textdiff is the compact line diff shown for a proposal's preview
// and a changed upstream descriptor.
package textdiff

import (
	"fmt"
	"strings"
)

// Unified is a compact line diff of a and b labelled name (a file's path,
// a tool's name): the changed region with up to three lines of context
// around it; "" when they are equal.
func Unified(name, a, b string) string {
	al, bl := lines(a), lines(b)
	pre := 0
	for pre < len(al) && pre < len(bl) && al[pre] == bl[pre] {
		pre++
	}
	suf := 0
	for suf < len(al)-pre && suf < len(bl)-pre && al[len(al)-1-suf] == bl[len(bl)-1-suf] {
		suf++
	}
	if pre == len(al) && pre == len(bl) {
		return ""
	}
	const ctx = 3
	start := max(pre-ctx, 0)
	aEnd, bEnd := min(len(al)-suf+ctx, len(al)), min(len(bl)-suf+ctx, len(bl))
	var out strings.Builder
	fmt.Fprintf(&out, "--- a/%s\n+++ b/%s\n@@ -%d,%d +%d,%d @@\n", name, name, start+1, aEnd-start, start+1, bEnd-start)
	line := func(prefix, s string) {
		out.WriteString(prefix + strings.TrimSuffix(s, "\n") + "\n")
	}
	for _, s := range al[start:pre] {
		line(" ", s)
	}
	for _, s := range al[pre : len(al)-suf] {
		line("-", s)
	}
	for _, s := range bl[pre : len(bl)-suf] {
		line("+", s)
	}
	for _, s := range al[len(al)-suf : aEnd] {
		line(" ", s)
	}
	return out.String()
}

// lines splits s after each newline; a final newline ends the last line
// instead of starting an empty one.
func lines(s string) []string {
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}
