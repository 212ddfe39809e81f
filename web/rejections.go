package web

import (
	"fmt"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Refusals are evidence, but a flood of them (a page of another origin can
// make the operator's browser send thousands) must not grow the log
// without limit. Within each window, the first refusals of each code are
// recorded one by one, up to perCode distinct requests; the rest are
// counted and recorded as one event with the count and a sample when the
// window closes.
const (
	rejectWindow  = time.Minute
	rejectPerCode = 100
	maxAttrLen    = 256 // what is recorded of a path, Host or Origin
)

type rejectLog struct {
	mu      sync.Mutex
	now     func() time.Time
	emit    func(events.Event) events.ID
	start   time.Time
	seen    map[events.Code]map[string]bool // distinct refusals recorded this window
	dropped map[events.Code]*suppressed
}

type suppressed struct {
	count  int
	sample map[string]string
}

func newRejectLog(now func() time.Time, emit func(events.Event) events.ID) *rejectLog {
	return &rejectLog{now: now, emit: emit, seen: map[events.Code]map[string]bool{}, dropped: map[events.Code]*suppressed{}}
}

// record records one refusal, or counts it when its code has had its share
// of this window.
// key tells repeated refusals apart from distinct ones; it may include
// what is not recorded (the query, which can hold a token), as a hash.
func (l *rejectLog) record(code events.Code, key string, attrs map[string]string) {
	for k, v := range attrs {
		if len(v) > maxAttrLen {
			attrs[k] = fmt.Sprintf("%s…[%d bytes]", v[:maxAttrLen], len(v))
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if now.Sub(l.start) >= rejectWindow {
		l.flushLocked()
		l.start = now
	}
	seen := l.seen[code]
	if seen == nil {
		seen = map[string]bool{}
		l.seen[code] = seen
	}
	if seen[key] || len(seen) >= rejectPerCode {
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
	l.emit(events.Event{Kind: events.KindUIRejected, Code: code, Outcome: events.OutcomeOf(code), Attrs: events.AttrsOf(attrs)})
}

// flush records what was counted and starts a new window.
func (l *rejectLog) flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	l.start = l.now()
}

func (l *rejectLog) flushLocked() {
	for code, s := range l.dropped {
		attrs := s.sample
		attrs["count"] = fmt.Sprint(s.count)
		attrs["aggregated"] = "refusals of this code past the first " + fmt.Sprint(rejectPerCode) + " distinct ones, or repeated, since " + l.start.UTC().Format(time.RFC3339)
		l.emit(events.Event{Kind: events.KindUIRejected, Code: code, Outcome: events.OutcomeOf(code), Attrs: events.AttrsOf(attrs)})
	}
	clear(l.dropped)
	clear(l.seen)
}
