// Command peers runs one workload on tracebridge's event log and on the
// stores a user would pick instead, and prints one table of absolute figures
// and ratios measured in the same run (`make bench-peers`).
//
// The workload, for every store:
//   - ingest: 64 concurrent writers, each request 12 events, acknowledged
//     only once they are durable (fsync, or the store's equivalent);
//   - lookup: one request's 50 events, read and decoded, from a store of
//     -events events (requests of 50, 64 interleaved as concurrent calls are);
//   - scan: every event of that store, read and decoded, in order.
//
// It is its own module so that tracebridge does not depend on what it is
// compared with.
package main

import (
	"context"

	"github.com/tracebridge/tracebridge/events"
)

// peer is a store under test.
type peer interface {
	// Append stores one request's events and returns once they are durable.
	Append(ctx context.Context, evs []events.Event) error
	// Load bulk-loads a fixture as fast as the store allows (durability
	// per batch, not per request): its cost is not measured.
	Load(evs []events.Event) error
	// Request reads and decodes the events of one request, in order.
	Request(req events.ID) (int, error)
	// Scan reads and decodes every event, in order.
	Scan() (int, error)
	Close() error
}

// peerKind names a store and opens an empty one in dir. bulk opens the
// store the lookup and scan read, which Load fills as fast as the store
// allows: a store whose durability is a server setting (JetStream's sync
// interval) is loaded without it and read with it.
type peerKind struct {
	name, note string
	open       func(dir string, bulk bool) (peer, error)
}
