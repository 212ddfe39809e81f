package events

import (
	"sync"
	"sync/atomic"
)

// tags are attributes an Emitter adds to every event of a session or a
// request: who made it (identity.User's attributes), set once where the
// request came in instead of at every place that emits one of its events.
type tags struct {
	n  atomic.Int32 // entries in m: zero costs Emit one atomic load
	mu sync.RWMutex
	m  map[ID]Attrs
}

// Tag adds attrs (key, value pairs) to every event emitted from now on
// whose session id or request id is id, until Untag(id). An attribute the
// event sets itself is kept.
func (e *Emitter) Tag(id ID, kv ...string) {
	if id.IsZero() || len(kv) == 0 {
		return
	}
	t := &e.tags
	t.mu.Lock()
	if t.m == nil {
		t.m = map[ID]Attrs{}
	}
	if _, ok := t.m[id]; !ok {
		t.n.Add(1)
	}
	t.m[id] = A(kv...)
	t.mu.Unlock()
}

// Untag ends Tag(id).
func (e *Emitter) Untag(id ID) {
	t := &e.tags
	t.mu.Lock()
	if _, ok := t.m[id]; ok {
		delete(t.m, id)
		t.n.Add(-1)
	}
	t.mu.Unlock()
}

// tagged adds the tags of ev's session and request to its attributes.
func (e *Emitter) tagged(ev *Event) {
	t := &e.tags
	if t.n.Load() == 0 {
		return
	}
	t.mu.RLock()
	s, r := t.m[ev.SessionID], t.m[ev.RequestID]
	t.mu.RUnlock()
	if len(s)+len(r) == 0 {
		return
	}
	// One new slice (the event's may be shared with a copy of it), the
	// event's own attributes last so they win.
	merged := make(Attrs, 0, len(s)+len(r)+len(ev.Attrs))
	ev.Attrs = sortedLastWins(append(append(append(merged, s...), r...), ev.Attrs...))
}
