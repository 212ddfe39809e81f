package config

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Watch calls changed each time the file at path changes (its size or
// modification time, checked every period; appearing and disappearing
// count), until ctx ends.
func Watch(ctx context.Context, path string, every time.Duration, changed func()) {
	stamp := func() string {
		fi, err := os.Stat(path)
		if err != nil {
			return "missing"
		}
		return fmt.Sprint(fi.ModTime().UnixNano(), fi.Size())
	}
	last := stamp()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if now := stamp(); now != last {
			last = now
			changed()
		}
	}
}

// LoadedEvent records that the configuration at path, whose text is b,
// was put in force, or (err) that it is broken and every call is denied
// with ConfigInvalid until it is fixed.
func LoadedEvent(path string, b []byte, err error) events.Event {
	sum := sha256.Sum256(b)
	e := events.Event{Kind: events.KindConfigLoaded, Outcome: events.OK, Attrs: events.A("path", path, "sha256", hex.EncodeToString(sum[:]), "config", string(b))}
	if err != nil {
		e.Outcome, e.Code = events.OutcomeOf(events.CodeConfigInvalid), events.CodeConfigInvalid
		e.Attrs.Set("error", err.Error())
	}
	return e
}
