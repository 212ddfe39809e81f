package main

import (
	"log/slog"
	"time"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/hub"
)

// pipeTimeout bounds one call to a workspace host: [pipe] timeout, or 5s.
func pipeTimeout(cfg *config.Config) time.Duration {
	if cfg != nil {
		return cfg.PipeTimeout()
	}
	return 5 * time.Second
}

// grantsOf is dir's store of OAuth grants (nil when its key cannot be
// read, which the log says: OAuth servers then answer UpstreamUnauthorized).
func grantsOf(dir hub.DataDir, log *slog.Logger) upstream.TokenStore {
	s, err := openGrantStore(dir)
	if err != nil {
		log.Warn("OAuth grants unavailable: OAuth servers answer UpstreamUnauthorized", "err", err)
		return nil
	}
	return s
}
