package loopback

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Refusals are evidence, but a flood of them (a page of another origin can
// make the operator's browser send thousands; another user can knock on a
// port) must not grow the log without limit. Within each window, the first
// refusals of each code are recorded one by one, up to PerCode distinct
// ones; the rest are counted, and the count is recorded as one event with
// a sample when the window closes (Flush, or Run's ticker). No refusal goes
// uncounted.
const (
	Window     = time.Minute
	PerCode    = 100
	maxAttrLen = 256 // what is recorded of a path, Host or Origin
)

// Refusals aggregates one listener's refusals into events of one kind.
// Safe for concurrent use.
type Refusals struct {
	kind    string
	now     func() time.Time
	emit    func(events.Event) events.ID
	mu      sync.Mutex
	start   time.Time
	seen    map[events.Code]map[string]bool // distinct refusals recorded this window
	dropped map[events.Code]*suppressed
}

type suppressed struct {
	count  int
	sample map[string]string
}

// NewRefusals records refusals as events of kind through emit.
func NewRefusals(kind string, now func() time.Time, emit func(events.Event) events.ID) *Refusals {
	if now == nil {
		now = time.Now
	}
	return &Refusals{kind: kind, now: now, emit: emit, seen: map[events.Code]map[string]bool{}, dropped: map[events.Code]*suppressed{}}
}

// Record records one refusal, or counts it when its code has had its share
// of this window. key tells repeated refusals apart from distinct ones; it
// may include what is not recorded (the query, which can hold a token), as
// a hash. attrs longer than 256 bytes are cut, with their length.
func (l *Refusals) Record(code events.Code, key string, attrs map[string]string) {
	for k, v := range attrs {
		if len(v) > maxAttrLen {
			attrs[k] = fmt.Sprintf("%s…[%d bytes]", v[:maxAttrLen], len(v))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.start) >= Window {
		l.flushLocked()
		l.start = now
	}
	seen := l.seen[code]
	if seen == nil {
		seen = map[string]bool{}
		l.seen[code] = seen
	}
	if seen[key] || len(seen) >= PerCode {
		s := l.dropped[code]
		if s == nil {
			s = &suppressed{}
			l.dropped[code] = s
		}
		s.count++
		s.sample = attrs
		return
	}
	seen[key] = true
	l.emit(events.Event{Kind: l.kind, Code: code, Outcome: events.OutcomeOf(code), Attrs: events.AttrsOf(attrs)})
}

// Flush records what was counted and starts a new window.
func (l *Refusals) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.start = l.now()
}

// Run flushes every Window until ctx ends, then once more.
func (l *Refusals) Run(ctx context.Context) {
	t := time.NewTicker(Window)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.Flush()
			return
		case <-t.C:
			l.Flush()
		}
	}
}

func (l *Refusals) flushLocked() {
	for code, s := range l.dropped {
		attrs := s.sample
		attrs["count"] = fmt.Sprint(s.count)
		attrs["aggregated"] = "refusals of this code past the first " + fmt.Sprint(PerCode) + " distinct ones, or repeated, since " + l.start.UTC().Format(time.RFC3339)
		l.emit(events.Event{Kind: l.kind, Code: code, Outcome: events.OutcomeOf(code), Attrs: events.AttrsOf(attrs)})
	}
	clear(l.dropped)
	clear(l.seen)
}

// ForeignPeer records a connection SameUser closed (a Refused).
func (l *Refusals) ForeignPeer(addr string, uid int, err error) {
	l.Record(events.CodeForeignPeer, fmt.Sprint("uid ", uid), map[string]string{"remote": addr, "uid": fmt.Sprint(uid), "error": err.Error()})
}
