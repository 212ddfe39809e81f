package upstream

import (
	"regexp"
	"strings"
	"testing"
)

var clientNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

func TestToolNames(t *testing.T) {
	if got := toolName("github", "create_issue"); got != "github__create_issue" {
		t.Fatalf("got %q", got)
	}
	// Names clients would refuse, or that would collide once cleaned, get a
	// hash suffix: distinct, stable, valid.
	long := strings.Repeat("x", 80)
	cases := []string{"read.file", "read_file", "read file", "ünïcode", long, long + "y", "a/b", "a_b"}
	seen := map[string]string{}
	for _, tool := range cases {
		got := toolName("fs", tool)
		if !clientNameRE.MatchString(got) {
			t.Fatalf("%q → %q: not a valid client tool name", tool, got)
		}
		if got != toolName("fs", tool) {
			t.Fatalf("%q: name not stable", tool)
		}
		if prev, dup := seen[got]; dup {
			t.Fatalf("%q and %q both named %q", prev, tool, got)
		}
		seen[got] = tool
	}
	if toolName("fs", "read_file") != "fs__read_file" {
		t.Fatal("a valid name was changed")
	}
}
