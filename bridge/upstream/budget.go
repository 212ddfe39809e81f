package upstream

import (
	"sync"
	"time"
)

// budget bounds what a hostile upstream can make the bridge record: at
// most n events of one kind per server and window; past it they are
// counted, and the count is recorded as one summary event once the window
// is over (or when the server closes). Growth of the log per attack byte
// is bounded by it.
type budget struct {
	n      int
	window time.Duration

	mu      sync.Mutex
	start   time.Time
	used    int
	dropped int
}

// take reports whether one more event may be recorded at now, and how
// many were dropped in the window that now ended (to record as a summary).
func (b *budget) take(now time.Time) (ok bool, dropped int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now.Sub(b.start) >= b.window {
		dropped = b.dropped
		b.start, b.used, b.dropped = now, 0, 0
	}
	if b.used < b.n {
		b.used++
		return true, dropped
	}
	b.dropped++
	return false, dropped
}

// drain returns what was dropped and not yet summarised.
func (b *budget) drain() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	d := b.dropped
	b.dropped = 0
	return d
}

// Budgets per server and minute.
const (
	logBudget         = 100 // notifications/message recorded (all are forwarded)
	listChangedBudget = 20  // notifications/tools/list_changed recorded
	pinBudget         = 500 // tools pinned or changed (tools past it are not served until pinned)
	// refreshEvery is the shortest time between two listings a server's
	// list_changed notifications cause; notifications in between are
	// folded into the next listing.
	refreshEvery = 500 * time.Millisecond
)
