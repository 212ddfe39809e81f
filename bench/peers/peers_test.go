package main

import (
	"os"
	"strings"
	"testing"
)

// TestEveryPeerRunsTheWorkload runs the whole comparison small: every store
// ingests, holds every event it acknowledged, returns each request's 50
// events and scans them all (measure checks the counts), and the table
// names each store.
func TestEveryPeerRunsTheWorkload(t *testing.T) {
	out, err := os.CreateTemp(t.TempDir(), "table")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(out, 6400, 100, 8, 20, "", t.TempDir()); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	for _, p := range peers {
		if !strings.Contains(string(b), p.name+": ") {
			t.Errorf("the table lacks %s:\n%s", p.name, b)
		}
	}
	t.Logf("\n%s", b)
}
