package config

import (
	"strconv"
	"strings"
	"time"
)

// Retention archives old events on a schedule, in the hub process (serve,
// up). Empty Keep: off.
type Retention struct {
	// Keep is how long events stay in the hot log: "90d", "36h".
	Keep string `toml:"keep"`
	// Dir is the archive (default: archive/ in the data dir).
	Dir string `toml:"dir"`
	// Every is how often the hub looks for events to archive. Default 1h.
	Every string `toml:"every"`
}

// KeepFor is Keep parsed (days allowed); 0 when off or invalid.
func (r Retention) KeepFor() time.Duration { return parseDays(r.Keep) }

// Interval is Every parsed (1h by default).
func (r Retention) Interval() time.Duration {
	if d := parseDays(r.Every); d > 0 {
		return d
	}
	return time.Hour
}

// parseDays is time.ParseDuration that also takes whole days ("90d").
func parseDays(s string) time.Duration {
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if days, err := strconv.Atoi(n); err == nil && days > 0 {
			return time.Duration(days) * 24 * time.Hour
		}
		return 0
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}

func (c *Config) validateRetention(bad func(key, format string, args ...any)) {
	r := c.Retention
	if r.Keep != "" && r.KeepFor() == 0 {
		bad("retention.keep", "%q is not a duration such as \"90d\" or \"36h\"", r.Keep)
	}
	if r.Every != "" && parseDays(r.Every) == 0 {
		bad("retention.every", "%q is not a duration such as \"1h\"", r.Every)
	}
}
