// Package hubtest gives other packages' tests a real hub whose
// projections are checked when the test ends: the views the hub kept as
// the test's events arrived must equal a rebuild from the log.
package hubtest

import (
	"context"
	"testing"

	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections/projtest"
)

// Open opens a hub node with opts. When the test ends, after its own
// cleanups (close its emitters there or before), the node is closed and
// its store checked with projtest.CheckRebuild.
func Open(t testing.TB, opts hub.Options) *hub.Node {
	t.Helper()
	node, err := hub.Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := node.Close(); err != nil {
			t.Errorf("hubtest: close: %v", err)
		}
		projtest.CheckRebuild(t, opts.Dir.Store())
	})
	return node
}
