// Package loopback holds what every loopback listener of tracebridge
// shares (the operator UI, `mcp --http`): a listener that lets only this
// user's processes in, and one aggregator of refusals, so a flood of them
// is counted rather than recorded one event per request.
//
// Why the peer's uid: a port on 127.0.0.1 is reachable by every local user,
// and a token another user captured (a squatted port, a URL in a browser's
// argv) must give that user nothing. On Linux the owner of the other end
// of an accepted connection is read from /proc/net/tcp{,6}; elsewhere the
// check is not available and the listener says so once.
package loopback
