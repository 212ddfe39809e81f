package store_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// The log in three calls: Open a store, Append a request's events (durable
// when Append returns: one journal frame, one fdatasync), Verify the hash
// chain. Seqs are the log's order; ByRequest reads one run back.
func Example() {
	dir, _ := os.MkdirTemp("", "tracebridge-example")
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "events.db"), store.Options{})
	if err != nil {
		panic(err)
	}
	defer st.Close()

	req := events.NewID()
	at := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	seqs, err := st.Append(context.Background(), []events.Event{
		{ID: events.NewID(), Time: at, Kind: events.KindMCPRequestReceived, Boundary: events.BoundaryMCP, RequestID: req, Outcome: events.OK},
		{ID: events.NewID(), Time: at, Kind: events.KindMCPResponseSent, Boundary: events.BoundaryMCP, RequestID: req, Outcome: events.OK},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println("seqs", seqs)

	run, _ := st.ByRequest(req)
	for _, e := range run {
		fmt.Println(e.Seq, e.Kind)
	}
	rep, _ := st.Verify()
	fmt.Println("verified:", rep.OK(), rep.Events, "events")
	// Output:
	// seqs [1 2]
	// 1 mcp.request.received
	// 2 mcp.response.sent
	// verified: true 2 events
}
