package main

import (
	"os"
	"runtime/debug"
)

// bridgeGCPercent is the collector's target for `mcp`: a bridge's live heap
// is small and most of what it allocates (frames, events, JSON) dies within
// the call, so collecting four times less often buys calls/s (measured
// with make bench-gateway; docs/ARCHITECTURE.md, "Performance"), bounded
// by bridgeMemoryLimit.
const (
	bridgeGCPercent   = 400
	bridgeMemoryLimit = 1 << 30
)

// tuneGC sets them unless the operator set GOGC or GOMEMLIMIT.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(bridgeGCPercent)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(bridgeMemoryLimit)
	}
}
