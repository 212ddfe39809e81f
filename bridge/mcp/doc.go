// Package mcp serves the executor's catalog over MCP (go-sdk) and records
// every message that crosses the stdio boundary.
//
// The evidence connection wraps the SDK's transport. On Read it gives every
// request a request id (a ULID), records mcp.request.received (JSON-RPC id,
// method, tool, client, protocol version, W3C traceparent from
// params._meta) and hands the id to handlers through RequestExtra; it
// records notifications (cancellations name the request they cancel) and a
// malformed or oversized line as mcp.session.aborted. On Write it records
// mcp.response.sent with the result's code, adds
// _meta["tracebridge/requestId"] to every tools/call result, and writes the
// frame only once the request's events are durable (Flush). If the log
// cannot be written the frame still goes out after the flush fails: the
// executor already refused what must not run without evidence.
package mcp
