// Package upstream is the gateway: it puts the MCP servers a user already
// runs behind the executor. Each [servers.NAME] of tracebridge.toml is an
// upstream, a stdio command the bridge starts (on first use, or at start
// with start = "eager") or a Streamable HTTP endpoint it dials, as a go-sdk
// client. The upstream's tools join the executor's catalog as NAME__tool
// (ToolName), so every call runs through catalog → policy → secrets →
// approval → run → audit like a built-in tool, and the hop itself is its
// own boundary: upstream.started/exited/connected, upstream.request.sent
// with the upstream's JSON-RPC id, upstream.response.received, its
// notifications, cancellations and timeouts.
//
// Upstreams are not trusted. A tool's descriptor (name, description, input
// schema, annotations) is pinned by hash the first time it is seen; a
// later change refuses the tool with ToolChanged until an operator accepts
// it (the pins projection holds what is accepted). A crash, a hang,
// garbage on stdout or an oversized frame is a coded error for the call
// in flight (UpstreamUnavailable, UpstreamTimeout, UpstreamProtocol), the
// upstream is restarted with backoff on a later call, and the bridge keeps
// serving. An upstream's stderr goes to the bridge's log, redacted, never
// to stdout.
package upstream
