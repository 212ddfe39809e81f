package config

import "time"

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

// KeepFor is Keep parsed (days and weeks allowed); 0 when off or invalid.
func (r Retention) KeepFor() time.Duration { return positive(r.Keep) }

// Interval is Every parsed (1h by default).
func (r Retention) Interval() time.Duration {
	if d := positive(r.Every); d > 0 {
		return d
	}
	return time.Hour
}

func (c *Config) validateRetention(bad func(key, format string, args ...any)) {
	r := c.Retention
	if r.Keep != "" && r.KeepFor() == 0 {
		bad("retention.keep", "%q is not a duration such as \"90d\" or \"36h\"", r.Keep)
	}
	if r.Every != "" && positive(r.Every) == 0 {
		bad("retention.every", "%q is not a duration such as \"1h\"", r.Every)
	}
}
