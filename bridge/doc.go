// Package bridge holds the MCP side of tracebridge: the stdio server
// (bridge/mcp), the executor every tool call runs through
// (bridge/executor), the built-in and discovered tools (bridge/tools) and
// the configuration that shapes policy, approval, secrets and discovery
// (bridge/config).
package bridge
