package config

import (
	"testing"
	"time"
)

// One duration syntax everywhere: Go's, plus whole days and weeks.
func TestParseDuration(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"36h": 36 * time.Hour, "7d": 7 * 24 * time.Hour, "2w": 14 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90d": 90 * 24 * time.Hour, "0d": 0,
	} {
		if got, err := ParseDuration(in); err != nil || got != want {
			t.Errorf("%q: %v %v, want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "7x", "1d-3h", "7 d", "999999999d"} {
		if got, err := ParseDuration(bad); err == nil {
			t.Errorf("%q parsed as %v", bad, got)
		}
	}
	c, err := Parse("tb.toml", []byte("[approval]\ntimeout = \"1d\"\n[retention]\nkeep = \"2w\"\n"))
	if err != nil || c.ApprovalTimeout() != 24*time.Hour || c.Retention.KeepFor() != 14*24*time.Hour {
		t.Fatalf("config: %v %v %v", err, c.ApprovalTimeout(), c.Retention.KeepFor())
	}
}
