package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A kept session's POST streams on 2025-11-25 are resumable (SEP-1699):
// the first event primes the stream (an id, the retry delay, no data),
// every event has an id, and what a stream carries stays in the session,
// so a client that lost the stream, or that the front door asked to come
// back, resumes it with GET and Last-Event-ID. A dropped stream is not a
// cancellation (the spec's words); a call whose client does not come back
// within resumeGrace is cancelled as before. The 2026-07-28 stateless path
// has no resumption (SEP-2575).
const (
	resumeRetry = 500 * time.Millisecond // the retry field: how long a client waits before coming back
	resumeGrace = 30 * time.Second       // a call whose client left and did not come back is cancelled then
	logCap      = 1 << 20                // notifications kept per stream (its answer is always kept)
	keptLogs    = 16                     // streams kept per session for resumption, the oldest ended ones forgotten first
	maxResumers = 16                     // GET streams resuming at once per session
)

// sseLog is what one resumable POST stream carried.
type sseLog struct {
	n    int             // the stream's number in its session: event i is "n_i", the priming one "n_0"
	call json.RawMessage // the JSON-RPC id of the call it answers

	mu       sync.Mutex
	events   [][]byte
	size     int
	answered bool          // the last event is the call's answer
	ended    bool          // nothing more comes: answered, or the session ended first
	polled   bool          // the call's server asked its client to come back: so is this stream's
	back     chan struct{} // closed when a client attaches after a poll
	retry    time.Duration // the delay the poll asks (0: the priming event's)
	req      events.ID     // the call's request id, once a poll named it
	writer   int           // the attached writer (0: none); a newer one takes over
	writers  int
	wake     chan struct{} // closed and replaced on each change
}

func newSSELog(n int, call json.RawMessage) *sseLog {
	return &sseLog{n: n, call: call, wake: make(chan struct{})}
}

// changed wakes the writer. l.mu is held.
func (l *sseLog) changed() {
	close(l.wake)
	l.wake = make(chan struct{})
}

func (l *sseLog) add(line []byte, answer bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !answer && l.size+len(line) > logCap {
		return // a stream nobody reads loses notifications, never its answer
	}
	l.events = append(l.events, line)
	l.size += len(line)
	if answer {
		l.answered, l.ended = true, true
	}
	l.changed()
}

func (l *sseLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.ended = true
	l.changed()
}

// poll asks the attached writer to end the stream; the channel is closed
// when a client attaches again.
func (l *sseLog) poll(req events.ID, retry time.Duration) <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ended {
		return nil
	}
	l.polled, l.retry, l.req = true, retry, req
	if l.back == nil {
		l.back = make(chan struct{})
	}
	l.changed()
	return l.back
}

func (l *sseLog) attach() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writers++
	l.writer, l.polled = l.writers, false
	if l.back != nil {
		close(l.back)
		l.back = nil
	}
	l.changed()
	return l.writer
}

func (l *sseLog) detach(me int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.writer == me {
		l.writer = 0
	}
}

// unresumed: the call is not answered and no client follows its stream.
func (l *sseLog) unresumed() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.writer == 0 && !l.ended
}

// How a writer stopped following a stream.
type followEnd int

const (
	followAnswered followEnd = iota // the answer was written
	followPolled                    // the client is asked to come back
	followGone                      // the client left, or a newer writer took over
	followEnded                     // the session ended before the answer
	followNothing                   // the stream had ended and nothing was left to send
)

// follow writes the stream's events from index from on, and each as it
// comes, as writer me, until one of the followEnds.
func (l *sseLog) follow(ctx context.Context, w io.Writer, from, me int, sessionDone <-chan struct{}) followEnd {
	fl, _ := w.(http.Flusher)
	for first := true; ; first = false {
		l.mu.Lock()
		if l.writer != me {
			l.mu.Unlock()
			return followGone
		}
		pending := l.events[min(from, len(l.events)):]
		answered, ended, polled, retry, wake := l.answered, l.ended, l.polled, l.retry, l.wake
		l.mu.Unlock()
		for _, ev := range pending {
			from++
			fmt.Fprintf(w, "id: %d_%d\nevent: message\ndata: %s\n\n", l.n, from, ev)
		}
		if len(pending) > 0 && fl != nil {
			fl.Flush()
		}
		switch {
		case ended && first && len(pending) == 0:
			return followNothing
		case answered:
			return followAnswered
		case ended:
			return followEnded
		case polled:
			if retry > 0 { // the upstream's delay, as it would tell the client directly
				fmt.Fprintf(w, "retry: %d\n\n", retry.Milliseconds())
			}
			return followPolled
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return followGone
		case <-sessionDone:
			return followEnded
		}
	}
}

// resumed records that a client came back for l's stream after event
// last: a crossing of the front door like a request (the call's request
// id when a poll named it; the call's JSON-RPC id and the session always).
func (h *httpSession) resumed(l *sseLog, last string) {
	if h.emit == nil {
		return
	}
	l.mu.Lock()
	req, kept, answered := l.req, len(l.events), l.answered
	l.mu.Unlock()
	h.emit(events.Event{Kind: events.KindMCPStreamResumed, RequestID: req, Outcome: events.OK,
		Attrs: events.A("jsonrpcId", truncate(string(l.call), 64), "lastEventId", last, "stream", strconv.Itoa(l.n),
			"kept", strconv.Itoa(kept), "answered", strconv.FormatBool(answered))})
}

// eventStreamHeader answers 200 with an event stream; the header goes
// with the first flush.
func eventStreamHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// openEventStream is eventStreamHeader and first (when not "") flushed at
// once: the client knows its request was taken.
func openEventStream(w http.ResponseWriter, first string) {
	eventStreamHeader(w)
	io.WriteString(w, first)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

// drainReady hands f what ch holds now: what the bridge wrote before a
// call's answer goes before it (select picks at random among ready
// channels).
func drainReady(ch chan []byte, f func([]byte)) {
	for {
		select {
		case p := <-ch:
			f(p)
		default:
			return
		}
	}
}

// parseEventID reads "n_i", an id follow wrote.
func parseEventID(s string) (n, i int, ok bool) {
	a, b, ok := strings.Cut(s, "_")
	if !ok {
		return 0, 0, false
	}
	n, err1 := strconv.Atoi(a)
	i, err2 := strconv.Atoi(b)
	return n, i, err1 == nil && err2 == nil && n > 0 && i >= 0
}

// primes reports whether a call posted with r gets a resumable stream: a
// kept session, a client that reads event streams, and a protocol that
// knows priming events (2025-11-25; 2026-07-28 removed resumption).
func (h *httpSession) primes(r *http.Request) bool {
	v := r.Header.Get("Mcp-Protocol-Version")
	return h.kept && acceptsSSE(r) && v >= "2025-11-25" && v < "2026-07-28"
}

func acceptsSSE(r *http.Request) bool {
	return strings.Contains(r.Header.Get("Accept"), "text/event-stream")
}

// newLog starts the log of call id's stream, forgetting the oldest ended
// log past keptLogs.
func (h *httpSession) newLog(id json.RawMessage) *sseLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nextLog++
	l := newSSELog(h.nextLog, id)
	for i, old := range h.logs {
		if len(h.logs) < keptLogs {
			break
		}
		old.mu.Lock()
		ended := old.ended
		old.mu.Unlock()
		if ended {
			h.logs = append(h.logs[:i:i], h.logs[i+1:]...)
			break
		}
	}
	h.logs = append(h.logs, l)
	h.byCall[canonicalID(id)] = l
	return l
}

func (h *httpSession) logNumbered(n int) *sseLog {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, l := range h.logs {
		if l.n == n {
			return l
		}
	}
	return nil
}

// poll asks the client of call in to come back for its answer: its
// server asked the gateway the same (PollFunc).
func (h *httpSession) poll(in json.RawMessage, req events.ID, retry time.Duration) <-chan struct{} {
	h.mu.Lock()
	l := h.byCall[canonicalID(in)]
	h.mu.Unlock()
	if l == nil {
		return nil
	}
	return l.poll(req, retry)
}

// serveLog answers a call's POST with its resumable stream: the priming
// event, then what the call's pump logs.
func (h *httpSession) serveLog(w http.ResponseWriter, r *http.Request, l *sseLog, me int, resp, prog chan []byte, done func()) {
	go h.pump(l, resp, prog, done)
	defer l.detach(me)
	openEventStream(w, fmt.Sprintf("id: %d_0\nretry: %d\ndata: \n\n", l.n, resumeRetry.Milliseconds()))
	if end := l.follow(r.Context(), w, 0, me, h.done); end == followGone || end == followPolled {
		go h.cancelUnresumed(l)
	}
}

// pump logs what belongs to l's call until its answer (or the session's
// end), then forgets the call (done).
func (h *httpSession) pump(l *sseLog, resp, prog chan []byte, done func()) {
	defer func() {
		done()
		h.mu.Lock()
		if h.byCall[canonicalID(l.call)] == l {
			delete(h.byCall, canonicalID(l.call))
		}
		h.mu.Unlock()
	}()
	for {
		select {
		case line := <-prog:
			l.add(line, false)
		case line, ok := <-resp:
			if !ok {
				l.end()
				return
			}
			drainReady(prog, func(p []byte) { l.add(p, false) })
			l.add(line, true)
			return
		}
	}
}

// cancelUnresumed cancels l's call when, resumeGrace after its client
// left, no client follows its stream and it is still unanswered.
func (h *httpSession) cancelUnresumed(l *sseLog) {
	t := time.NewTimer(resumeGrace)
	defer t.Stop()
	select {
	case <-t.C:
	case <-h.done:
		return
	}
	if l.unresumed() {
		h.cancel(l.call, fmt.Sprintf("the client left the call's stream and did not resume it within %s", resumeGrace))
	}
}

// cancel cancels call id as a client would.
func (h *httpSession) cancel(id json.RawMessage, reason string) {
	c, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "notifications/cancelled",
		"params": map[string]any{"requestId": id, "reason": reason}})
	h.in.Write(append(c, '\n'))
}

// resume answers a GET with Last-Event-ID: the events of that stream after
// it, then the rest as it comes. A stream already over with nothing left
// is held open until the client leaves: the TypeScript SDK client counts
// only results as answers and comes back after an error it already has.
func (h *httpSession) resume(w http.ResponseWriter, r *http.Request, last string) {
	n, from, ok := parseEventID(last)
	if !ok {
		http.Error(w, fmt.Sprintf("Last-Event-ID %q is not an event id of this session (N_I)", last), http.StatusBadRequest)
		return
	}
	l := h.logNumbered(n)
	if l == nil {
		http.Error(w, fmt.Sprintf("no stream %d to resume in this session: it was forgotten (a session keeps its last %d) or never began", n, keptLogs), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	if h.resumers >= maxResumers {
		h.mu.Unlock()
		http.Error(w, fmt.Sprintf("%d streams of this session are being resumed at once: close one", maxResumers), http.StatusTooManyRequests)
		return
	}
	h.resumers++
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.resumers--
		h.last = time.Now()
		h.mu.Unlock()
	}()
	me := l.attach()
	defer l.detach(me)
	h.resumed(l, last)
	openEventStream(w, "")
	switch l.follow(r.Context(), w, from, me, h.done) {
	case followNothing:
		select {
		case <-r.Context().Done():
		case <-h.done:
		}
	case followGone, followPolled:
		go h.cancelUnresumed(l)
	}
}

// serveGET streams the session's notifications (tools/list_changed, log
// messages) until the client disconnects or the session ends.
func (h *httpSession) serveGET(w http.ResponseWriter, r *http.Request) {
	ch := make(chan []byte, 64)
	h.mu.Lock()
	if h.get != nil {
		h.mu.Unlock()
		http.Error(w, "this session has a GET stream open already", http.StatusConflict)
		return
	}
	h.get = ch
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.get = nil
		h.last = time.Now() // idle from the stream's end: a client holding it was there
		h.mu.Unlock()
	}()
	openEventStream(w, "")
	fl, _ := w.(http.Flusher)
	for {
		select {
		case line := <-ch:
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", line)
			if fl != nil {
				fl.Flush()
			}
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}
