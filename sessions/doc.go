// Package sessions is recorded sessions: export a session from the log
// into a versioned, redacted JSONL file; re-drive it against the current
// build's bridge with the recording standing in for the host, every tool's
// outside world and every secret (a recording is data, never code); compare
// the evidence (drift); and write a run's artifact triad (log, metadata,
// diagram). It sits above the bridge in the layers; replay, below it, only
// judges one run.
package sessions
