package config

import (
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// leadingDays is a whole number of days or weeks before the rest of a
// duration: "90d", "2w", "1d12h".
var leadingDays = regexp.MustCompile(`^(\d+)([dw])(.*)$`)

// ParseDuration is time.ParseDuration that also takes whole days and weeks
// ("7d", "2w", "1d12h"): the one duration syntax of the configuration and
// the command line.
func ParseDuration(s string) (time.Duration, error) {
	m := leadingDays.FindStringSubmatch(s)
	if m == nil {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(m[1])
	if err != nil || n > 100000 {
		return 0, fmt.Errorf("duration %q: too many days", s)
	}
	d := time.Duration(n) * 24 * time.Hour
	if m[2] == "w" {
		d *= 7
	}
	if m[3] == "" {
		return d, nil
	}
	rest, err := time.ParseDuration(m[3])
	if err != nil || rest < 0 {
		return 0, fmt.Errorf("duration %q: want days or weeks then hours, minutes…, such as \"1d12h\"", s)
	}
	return d + rest, nil
}

// positive is s parsed when it is a positive duration, else 0.
func positive(s string) time.Duration {
	d, err := ParseDuration(s)
	if err != nil || d <= 0 {
		return 0
	}
	return d
}
