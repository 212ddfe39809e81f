// Package projections builds the read models operators and AI clients ask
// for — runs, audit envelopes, proposals, reviews, sessions — from the
// ordered event log.
//
// Each projection is a pure function of the log: Apply folds one event into
// its state. The Projector keeps every projection's state and checkpoint in
// the store's view buckets, written in one transaction per chunk of events,
// catches up from the checkpoints, and rebuilds from seq 1 on demand (or by
// itself when a projection's version changes or the log under a checkpoint
// is not the one it was built from).
package projections
