// Package bridge wires a bridge (New): the catalog of built-in, extra and
// discovered tools, the executor every call runs through
// (bridge/executor), the gateway to the configured upstream servers
// (bridge/upstream) and the MCP server over the executor (bridge/mcp),
// with the client of the workspace hosts (host, pipe).
// `tracebridge mcp` and a recorded session's re-drive build it the same
// way and differ only in Parts.
package bridge
