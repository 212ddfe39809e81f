package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tree keeps to the structure rules: no function over a cyclomatic
// complexity of 25, none over 80 lines in cmd/, no non-test file over 600
// lines.
func TestTreeKeepsToTheRules(t *testing.T) {
	_, fns, files, err := measure(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("measured %d files: not the module", len(files))
	}
	for _, b := range rules(fns, files) {
		t.Error(b)
	}
}

// Each rule catches what breaks it, and the harmless twin of each (at the
// limit) passes.
func TestRulesCatchWhatBreaksThem(t *testing.T) {
	root := t.TempDir()
	write := func(path, src string) {
		t.Helper()
		p := filepath.Join(root, path)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	branches := func(n int) string {
		return strings.Repeat("\tif x > 0 {\n\t\tx--\n\t}\n", n)
	}
	body := func(lines int) string { return strings.Repeat("\tx++\n", lines-2) }
	write("cmd/tool/long.go", "package main\n\nfunc long(x int) {\n"+body(81)+"}\n\nfunc atLimit(x int) {\n"+body(80)+"}\n")
	write("lib/complex.go", "package lib\n\nfunc complex(x int) {\n"+branches(25)+"}\n\nfunc atLimit(x int) {\n"+branches(24)+"}\n\nfunc longButNotCmd(x int) {\n"+body(200)+"}\n")
	write("lib/big.go", "package lib\n"+strings.Repeat("\n", 600))
	write("lib/fits.go", "package lib\n"+strings.Repeat("\n", 598))
	write("lib/big_test.go", "package lib\n"+strings.Repeat("\n", 900))
	_, fns, files, err := measure(root)
	if err != nil {
		t.Fatal(err)
	}
	got := rules(fns, files)
	want := []string{"cmd/tool.long: 81 lines", "lib.complex: cyclomatic complexity 26", "lib/big.go: 601 lines"}
	if len(got) != len(want) {
		t.Fatalf("rules found %d problems, want %d: %q", len(got), len(want), got)
	}
	for i, w := range want {
		if !strings.HasPrefix(got[i], w) {
			t.Errorf("problem %d: %q, want %q…", i, got[i], w)
		}
	}
}
