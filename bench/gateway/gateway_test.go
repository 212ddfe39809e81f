//go:build linux

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == noopArg { // a path's server: this binary again
		runNoop()
		return
	}
	os.Exit(m.Run())
}

// TestEveryPathAnswers runs the whole comparison small: every path starts,
// answers sequential and concurrent calls with the no-op tool's answer
// (measure fails on any error), and the table names each.
func TestEveryPathAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts every gateway (make test runs it)")
	}
	bin := filepath.Join(t.TempDir(), "tracebridge")
	build := exec.Command("go", "build", "-o", bin, "./cmd/tracebridge")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := os.CreateTemp(t.TempDir(), "table")
	if err != nil {
		t.Fatal(err)
	}
	if err := run(out, options{tracebridge: bin, peers: "peers", calls: 20, inflight: 4, duration: 300 * time.Millisecond, rounds: 2}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out.Name())
	for _, p := range paths {
		if !strings.Contains(string(b), p.name+": ") || strings.Count(string(b), "  "+p.name+"  ") != 2 {
			t.Errorf("the table lacks %s, or its round figures:\n%s", p.name, b)
		}
	}
	// Each tracebridge path's calls read back from its evidence: every
	// sequential call of both rounds, its hop to the server among the steps.
	for _, name := range []string{"tracebridge-stdio", "tracebridge-http", "tracebridge-http-2025"} {
		_, section, ok := strings.Cut(string(b), "through "+name+" (from its evidence; p50 of 40 calls;")
		if !ok {
			t.Errorf("no anatomy of %s's 40 sequential calls:\n%s", name, b)
			continue
		}
		section, _, _ = strings.Cut(section, "where a sequential call")
		for _, step := range []string{"upstream.request.sent → upstream.response.received", "first event → last", "outside the log"} {
			if !strings.Contains(section, step) {
				t.Errorf("%s's anatomy lacks %q:\n%s", name, step, section)
			}
		}
	}
	t.Logf("\n%s", b)
}
