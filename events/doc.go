// Package events defines the one thing every part of tracebridge talks in:
// the Event, a record of one boundary crossing.
//
// The package holds the domain: the Event type, the kind catalog (which
// boundary a kind belongs to, who talks to whom, whether it ends a step), the
// result codes that travel unchanged from an event to a tool result, id
// generation, the canonical binary encoding that the store hashes and keeps,
// redaction, and the Emitter that every producer uses.
//
// The contract of the Emitter is the durability rule of the whole system:
// Emit never blocks on I/O, and Flush returns nil only once every event
// emitted so far for that request has been acknowledged by the store, which
// acknowledges only after the transaction holding it is on disk. Nothing that
// must leave evidence (an MCP response, an edit) may happen before Flush
// returns nil.
//
// Redaction happens in Emit, before an event is queued, so no secret reaches
// the bus, the disk, stderr or the UI.
package events
