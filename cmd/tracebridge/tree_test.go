package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The command tree (what completion offers) and each command's own
// dispatch agree: asked for an unknown word, a command with subcommands
// refuses it as a usage error (exit 2) that names every subcommand it has,
// and only those the tree lists.
func TestCommandTreeMatchesDispatch(t *testing.T) {
	tree := commands()
	all := map[string]bool{}
	for _, c := range tree {
		for _, s := range c.subs {
			all[s] = true
		}
	}
	for name, c := range tree {
		if len(c.subs) == 0 {
			continue
		}
		var stdout, stderr bytes.Buffer
		m := &Main{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
		data := filepath.Join(t.TempDir(), "data")
		code := m.Run(context.Background(), []string{"--data", data, name, "no-such-word"})
		said := stderr.String()
		if code != exitUsage {
			t.Errorf("%s no-such-word: exit %d, want %d (usage)\n%s", name, code, exitUsage, said)
			continue
		}
		for _, s := range c.subs {
			if !strings.Contains(said, s) {
				t.Errorf("%s: its usage does not name %q, which the tree (completion) offers:\n%s", name, s, said)
			}
		}
		for s := range all {
			if strings.Contains(said, "want") && containsWord(said[strings.Index(said, "want"):], s) && !slices.Contains(c.subs, s) && s != name {
				t.Errorf("%s: its usage names %q, which the tree does not list for it:\n%s", name, s, said)
			}
		}
	}
}

func containsWord(text, w string) bool {
	for _, f := range strings.FieldsFunc(text, func(r rune) bool { return !(r >= 'a' && r <= 'z') }) {
		if f == w {
			return true
		}
	}
	return false
}
