package executor

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// A call waiting for approval on a real hub is woken by the decision's
// commit, not by polling: with polling set to an hour, the operator's
// decision (from its own emitter, as from another process) still reaches
// it long before the call's context (one minute) runs out. The pending list
// comes from the approvals projection.
func TestWaitingCallIsWokenByTheDecision(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: "notify-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer em.Close(ctx)
	operator := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer operator.Close(ctx)
	cat, _ := NewCatalog(&Tool{Descriptor: Descriptor{ID: "echo", Category: "test", Source: "builtin", Approval: "always",
		Capabilities: []string{config.CapTextSearch}}, InputSchema: SchemaFor[echoArgs](),
		Run: func(context.Context, Call) (any, error) { return "ran", nil }})
	cfg, _ := config.Parse("t", []byte("[approval]\nmode = \"prompt\"\ntimeout = \"10m\"\n"))
	x := New(Options{Catalog: cat, Emitter: em, Log: node, Config: cfg, Logger: quiet, PollEvery: time.Hour})

	req := em.NewID()
	go func() {
		for {
			pending, err := projections.PendingApprovals(ctx, node, time.Now())
			if err == nil && len(pending) == 1 {
				time.Sleep(50 * time.Millisecond) // the operator takes a moment: the wait is on record
				operator.Emit(projections.Decision(pending[0], events.Approve, "operator", "ok", time.Now()))
				operator.Flush(ctx, pending[0].RequestID)
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res := x.Execute(cctx, Invocation{Tool: "echo", Args: json.RawMessage(`{"text":"x"}`), RequestID: req})
	if res.Code != "" {
		t.Fatalf("the call was not woken by the decision: %+v", res)
	}
	if pending, _ := projections.PendingApprovals(ctx, node, time.Now()); len(pending) != 0 {
		t.Fatalf("still pending after the decision: %+v", pending)
	}
	// The operator's decision carries the wait, so the run shows it.
	evs, err := node.ByRequest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var f replay.Fold
	for i := range evs {
		f.Add(&evs[i])
	}
	if f.WaitMs < 50 {
		t.Fatalf("the run shows a wait of %.1f ms for an operator who took at least 50", f.WaitMs)
	}
}
