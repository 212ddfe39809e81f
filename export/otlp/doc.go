// Package otlp exports the log's runs as OpenTelemetry traces over OTLP,
// with the OpenTelemetry MCP semantic conventions: a trace per run (the
// client's own when it sent a traceparent), a server span per MCP request,
// a child span per boundary step the kind catalog knows (executor,
// approval — the wait for an operator included —, tool, pipe, host,
// upstream) and span events for point events (policy, secrets, catalog).
//
// Ids are derived from the request and event ids, so a run exported twice
// (after a crash, a collector outage) reaches the backend with the same
// trace and span ids: delivery is at least once, idempotent at the backend.
// The exporter follows the log from a checkpoint kept in a file (the seq
// of the last run exported), never from the append path.
package otlp
