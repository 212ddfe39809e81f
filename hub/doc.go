// Package hub runs the event log for one data dir and lets every process on
// that data dir use it.
//
// Whichever process first takes the store's file lock becomes the hub: it
// starts an embedded NATS server on 127.0.0.1 with a random port and token,
// writes hub.json (0600) so others can find it, serves appends and queries
// as request/reply, and republishes each committed event on
// tb.events.<requestId>.<kind>. Every other process attaches to it over NATS.
// A Node hides the difference: it elects or attaches on Open, and when the
// hub goes away it elects again and its Append is retried by the emitter,
// re-sending what was not acknowledged (the store drops duplicates by event
// id).
//
// Subjects:
//
//	tb.append           batch frame → {"seqs":[…]}; replies only once durable
//	tb.q.range          {"from","limit"} → batch frame, header Tb-Next
//	tb.q.request        {"id"} → batch frame
//	tb.q.session        {"id","from","limit"} → batch frame
//	tb.q.head           → {"seq","hash"}
//	tb.q.verify         {"checkpoints":[…]} → store.Report
//	tb.q.checkpoint     → store.Checkpoint of the current head, signed
//	tb.events.<req>.<kind>  one record per committed event, in seq order
//
// An error reply carries the headers Tb-Code (an events.Code) and Tb-Error.
package hub
