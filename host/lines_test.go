package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A quoted file is read again once it changes, and not before.
func TestLineCacheFollowsTheFile(t *testing.T) {
	h, _ := newHost(t)
	p := filepath.Join(h.WS.Dir(), "q.go")
	os.WriteFile(p, []byte("package q\n// one\n"), 0o644)
	var c lineCache
	first := c.get(h.WS, "q.go")
	if strings.Join(first, "|") != "package q|// one|" {
		t.Fatalf("lines: %q", first)
	}
	if again := c.get(h.WS, "q.go"); &again[0] != &first[0] {
		t.Fatal("an unchanged file was read again")
	}
	os.WriteFile(p, []byte("package q\n// two, longer\n"), 0o644)
	os.Chtimes(p, time.Now(), time.Now().Add(time.Second))
	if got := c.get(h.WS, "q.go"); got[1] != "// two, longer" {
		t.Fatalf("after a change: %q", got)
	}
	os.Remove(p)
	if got := c.get(h.WS, "q.go"); got != nil {
		t.Fatalf("a removed file: %q", got)
	}
	if got := c.get(h.WS, "../outside"); got != nil {
		t.Fatalf("outside the root: %q", got)
	}
}
