// Package store keeps the event log in one bbolt file.
//
// Buckets:
//
//	events      seq (8 bytes, big endian) → canonical record (events.Encode)
//	ids         event id (16 bytes)        → seq, for events without a request or past the
//	            first 64 of theirs (older stores: every event)
//	by_request  request id + seq           → a copy of the record (ADR 0011; empty in older stores)
//	by_session  session id + seq           → empty
//	meta        head (seq + hash), schema version, checkpoints
//
// An append of a stored id returns its seq and stores nothing: the writer
// looks for the id among the first 64 copies of its request in by_request,
// then in ids.
//
// One writer goroutine owns every append. Concurrent Append calls queue to
// it; it takes everything queued (up to Options.MaxBatch events), appends it
// as one frame to the journal beside the file (events.db.journal, ADR 0020),
// fdatasyncs it once, and only then answers each caller. An Append that
// returned nil is on disk. The applier writes acknowledged frames into bbolt
// behind (one transaction, bbolt's own fsyncs); Open applies the frames bbolt
// does not hold yet, and every read first waits for the frames acknowledged
// before it. A failed write or sync (EIO, ENOSPC: any errno) is fatal to the
// Store: it refuses every later append rather than retry and risk
// acknowledging an event the disk does not hold. A write that fails for want
// of space only pauses it.
//
// Each record's hash is SHA-256(previous hash | record body), so Verify finds
// the first seq whose bytes, order or neighbours changed. A signed checkpoint
// (seq, hash) kept outside the file exposes truncation and rollback to an
// older copy, which a self-consistent chain alone cannot show.
//
// bbolt holds an exclusive file lock from Open to Close; Open waits at most
// Options.Timeout for it and then returns ErrLocked, never blocking forever.
package store
