package web

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// notice is what a page hears of one committed event.
type notice struct {
	Seq       uint64    `json:"seq"`
	Kind      string    `json:"kind"`
	RequestID events.ID `json:"requestId,omitzero"`
	SessionID events.ID `json:"sessionId,omitzero"`
	Code      string    `json:"code,omitempty"`
	// Time is the event's own time (ms since the epoch), Sent when the hub
	// put it on the stream: pages measure delivery latency with them.
	Time int64 `json:"time"`
	Sent int64 `json:"sent"`
}

// subscriberBuffer bounds what a slow page may fall behind; past it
// notices are dropped (a page reloads its data on the next one) instead of
// growing memory.
const subscriberBuffer = 256

// feed follows the log from its head and fans each committed event out to
// the open event streams.
type feed struct {
	log    Log
	logger *slog.Logger
	mu     sync.Mutex
	subs   map[chan notice]struct{}
}

func newFeed(log Log, logger *slog.Logger) *feed {
	return &feed{log: log, logger: logger, subs: map[chan notice]struct{}{}}
}

func (f *feed) run(ctx context.Context) {
	head, _, err := f.log.Head(ctx)
	if err != nil {
		f.logger.Warn("ui: no live updates", "err", err)
		return
	}
	err = f.log.Follow(ctx, head+1, func(e events.Event) error {
		n := notice{Seq: e.Seq, Kind: e.Kind, RequestID: e.RequestID, SessionID: e.SessionID, Code: string(e.Code),
			Time: e.Time.UnixMilli(), Sent: time.Now().UnixMilli()}
		f.mu.Lock()
		for c := range f.subs {
			select {
			case c <- n:
			default: // full: dropped; the page reloads on the next one
			}
		}
		f.mu.Unlock()
		return nil
	})
	if err != nil && ctx.Err() == nil {
		f.logger.Warn("ui: live updates stopped", "err", err)
	}
}

func (f *feed) subscribe() (chan notice, func()) {
	c := make(chan notice, subscriberBuffer)
	f.mu.Lock()
	f.subs[c] = struct{}{}
	f.mu.Unlock()
	return c, func() {
		f.mu.Lock()
		delete(f.subs, c)
		f.mu.Unlock()
	}
}

// sse streams committed events to a page as server-sent events: one
// "commit" message per event.
func (s *Server) sse(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	c, done := s.feed.subscribe()
	defer done()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprint(w, "retry: 1000\n: hello\n\n")
	fl.Flush()
	keep := time.NewTicker(15 * time.Second)
	defer keep.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-keep.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case n := <-c:
			b, _ := json.Marshal(n)
			fmt.Fprintf(w, "event: commit\nid: %d\ndata: %s\n\n", n.Seq, b)
		}
		fl.Flush()
	}
}
