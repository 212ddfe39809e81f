package projections_test

import (
	"context"
	"fmt"
	"os"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// A reader asks the hub for a view and gets the view's own type back: here
// the runs view, one summary per request, judged as replay judges it.
func ExampleRead() {
	dir, _ := os.MkdirTemp("", "tracebridge-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	node, err := hub.Open(ctx, hub.Options{Dir: hub.DataDir(dir + "/data"), Role: hub.Elect, Name: "example"})
	if err != nil {
		panic(err)
	}
	defer node.Close()
	em := events.NewEmitter(node, events.EmitterOptions{})
	defer em.Close(ctx)

	req := em.NewID()
	em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: events.A("method", "tools/call", "tool", "regex_text_search")})
	em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.Unavailable, Code: events.CodePipeUnavailable, Attrs: events.A("method", "tools/call", "tool", "regex_text_search")})
	if err := em.Flush(ctx, req); err != nil {
		panic(err)
	}
	runs, err := projections.Read[replay.Summary](ctx, node, projections.Query{View: projections.ViewRuns, Request: req})
	if err != nil {
		panic(err)
	}
	for _, r := range runs {
		fmt.Println(r.Method, r.Tool, r.Status, r.Verdict.Code)
	}
	// Output:
	// tools/call regex_text_search failed PipeUnavailable
}
