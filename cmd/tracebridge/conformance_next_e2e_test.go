package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// conformanceNextDir holds the conformance suite's newest release and its
// reference server (testdata/conformance/next, installed by .ci/deps with
// npm ci; the Node 24 of testdata/conformance runs them).
func conformanceNextDir(t *testing.T) (dir, node, tsx string) {
	t.Helper()
	parent, node := conformanceDir(t)
	dir = filepath.Join(parent, "next")
	tsx = filepath.Join(dir, "node_modules", ".bin", "tsx")
	if _, err := os.Stat(tsx); err != nil {
		t.Fatalf("the newest conformance suite is not installed (%v): run `bash .ci/deps` (npm ci in %s), then test again", err, dir)
	}
	return dir, node, tsx
}

// Through equals direct on both protocol revisions: the suite's newest
// release (0.2.0-alpha.12) runs each requirement set at its own wire
// against its reference server directly and through `tracebridge mcp
// --http`, in the same run. Every check that passes directly passes
// through.
func TestConformanceNextThroughTheGateway(t *testing.T) {
	long(t)
	dir, node, tsx := conformanceNextDir(t)
	ref := startReference(t, dir, node, tsx, "everything-server.ts")
	cfg := writeConfig(t, fmt.Sprintf("[servers.cf]\nurl = %q\nprefix = false\napproval = { \"*\" = \"never\" }\n", ref))
	data := filepath.Join(t.TempDir(), "data")
	bridgeURL, token, stderr, _ := startHTTPBridge(t, data, cfg)
	front := frontDoorProxy(t, bridgeURL, token)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			direct := conformanceChecks(t, dir, node, ref, "--requirements", rev)
			through := conformanceChecks(t, dir, node, front, "--requirements", rev)
			compareConformance(t, direct, through)
		})
	}
	if t.Failed() {
		t.Logf("bridge stderr:\n%s", stderr.String())
	}
}
