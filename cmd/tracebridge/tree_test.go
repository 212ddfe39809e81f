package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
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

// Every command's --help shows its flags as they are typed (--name VALUE,
// as the README writes them), its own before the common ones, and the
// cluster flags by name on a few lines, not ten paragraphs; and the usage
// line names every flag the command has (mcp's used to omit --http).
func TestHelpShowsFlagsAsTyped(t *testing.T) {
	single := regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+\b`)
	for name := range commands() {
		var stdout, stderr bytes.Buffer
		m := &Main{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Getenv: func(string) string { return "" }}
		m.Run(context.Background(), []string{name, "--help"})
		help := stdout.String()
		if !strings.HasPrefix(help, "Usage: tracebridge ") || !strings.Contains(help, "--data DIR") {
			continue // a command whose help is its subcommands' list
		}
		if single.MatchString(help) {
			t.Errorf("%s --help prints a long flag with one dash: %q", name, single.FindString(help))
		}
		if n := strings.Count(help, "\n") - strings.Count(help[strings.Index(help, "Cluster flags"):], "\n"); strings.Contains(help, "Cluster flags") && strings.Count(help[strings.Index(help, "Cluster flags"):], "\n") > 4 {
			t.Errorf("%s --help spends more than 4 lines on the cluster flags (%d before them)", name, n)
		}
		usage, _, _ := strings.Cut(help, "\n\n") // the usage lines, one per subcommand
		own, _, _ := strings.Cut(help, "Flags of every subcommand:")
		for _, f := range regexp.MustCompile(`(?m)^  (--?[a-z][a-z-]*)`).FindAllStringSubmatch(own, -1) {
			if !strings.Contains(usage, f[1]) && !(name == "completion" || name == "help") {
				t.Errorf("%s --help: the usage %q does not name %s", name, usage, f[1])
			}
		}
	}
}

// tail's and replay's event lines keep their columns whatever the kind:
// the outcome starts in the same column for every kind of the catalog
// (the longest kinds pushed it right).
func TestEventLinesKeepTheirColumns(t *testing.T) {
	col := -1
	for _, k := range events.Kinds() {
		var b bytes.Buffer
		writeEventLine(&b, &events.Event{Seq: 1, Kind: k.Kind, Boundary: k.Boundary, From: k.From, To: k.To, Outcome: "timeout"})
		at := utf8.RuneCountInString(b.String()[:strings.Index(b.String(), " timeout")])
		if col == -1 {
			col = at
		}
		if at != col {
			t.Errorf("%s: the outcome starts at column %d, others at %d:\n%s", k.Kind, at, col, b.String())
		}
	}
}
