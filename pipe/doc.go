// Package pipe is the local protocol between the bridge and the workspace
// host: newline-delimited JSON over a Unix socket (a 0700 directory, a 0600
// socket, the peer's uid checked with SO_PEERCRED). docs/pipe-protocol.md is
// the contract an editor extension implements.
//
// A Request names a command, the request and operation ids and the W3C
// traceparent; the Response answers the same operation id. The client keeps
// one connection and multiplexes concurrent calls by operation id. Frames
// are capped (MaxFrame) before anything is allocated for them; unknown,
// empty and malformed commands fail closed (UnknownCommand,
// MalformedEnvelope). A missing host is an immediate PipeUnavailable whose
// message says what to start, never a timeout.
package pipe
