package events

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// Recorder is how every boundary records its crossings (an *Emitter is
// one): Emit queues an event and returns its id, Flush returns once every
// event of request req is durable, NewID gives the next id (an operation's,
// a request's) from the same source as the events'. Packages take it, or
// it plus what else they need of the emitter; no package declares its own.
type Recorder interface {
	Emit(Event) ID
	Flush(ctx context.Context, req ID) error
	NewID() ID
}

// Appender stores events durably and returns their seqs, in order. It is
// what the emitter needs from the log; the bus client and the store both
// provide it. Appending an event whose id is already stored returns the
// stored seq. A refusal for good is an *Err whose code is not Retryable.
type Appender interface {
	Append(ctx context.Context, evs []Event) ([]uint64, error)
}

// ErrEmitterClosed is returned by Flush for events emitted after Close.
var ErrEmitterClosed = errors.New("emitter closed")

// EmitterOptions configures an Emitter. The zero value works.
type EmitterOptions struct {
	// Redactor removes secrets from attributes. Nil: a redactor with a
	// random key (secret-like keys and known formats are still removed).
	Redactor *Redactor
	// IDs makes event ids. Nil: the process-wide source.
	IDs *IDSource
	// Now stamps events. Nil: time.Now.
	Now func() time.Time
	// MaxBatch caps the events sent in one append. Zero: 1024.
	MaxBatch int
	// Logger receives retry and rejection reports. Nil: slog.Default().
	Logger *slog.Logger
	// Linger is how long an event nobody flushes may wait to be sent with
	// later ones. A Flush, or a full batch, sends at once. Zero: 2ms.
	Linger time.Duration
	// AfterFunc arms the linger timer (tests give a fake clock's). Nil:
	// time.AfterFunc.
	AfterFunc func(time.Duration, func()) Timer
	// Payloads keeps attribute values longer than MaxAttrLen whole: each is
	// stored there before the event that refers to it is appended. Nil:
	// long values are cut to their first bytes, size and SHA-256.
	Payloads PayloadStore
	// MaxPayload is the longest value Payloads keeps; a longer one is cut
	// and says so (TooLarge, its size and the limit). Zero:
	// DefaultMaxPayload.
	MaxPayload int
}

// Timer is an armed linger timer: Stop disarms it.
type Timer interface{ Stop() bool }

// Emitter queues events and sends them to an Appender in the background, one
// batch at a time so each request's events reach the log in emit order.
// Events queued while a batch is in flight ride together in the next one.
// Transient append errors are retried with backoff until Close.
type Emitter struct {
	app  Appender
	opts EmitterOptions

	mu        sync.Mutex
	queue     []Event
	payloads  map[ID][]string    // the payloads of queued events, by event id
	requests  map[ID]*flushState // outstanding events per request id
	all       flushState         // outstanding events overall
	closed    bool
	lingering bool  // a linger timer is armed
	linger    Timer // it, stopped when the sender sends before it fires
	wake      chan struct{}
	done      chan struct{}
	stop      context.CancelFunc
	tags      tags
}

type flushState struct {
	n       int
	err     error
	waiters []chan struct{}
}

// NewEmitter starts an emitter sending to app.
func NewEmitter(app Appender, opts EmitterOptions) *Emitter {
	if opts.Redactor == nil {
		opts.Redactor = NewRedactor(randomKey())
	}
	if opts.IDs == nil {
		opts.IDs = defaultIDs
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = 1024
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Linger <= 0 {
		opts.Linger = 2 * time.Millisecond
	}
	if opts.AfterFunc == nil {
		opts.AfterFunc = func(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }
	}
	if opts.MaxPayload <= 0 {
		opts.MaxPayload = DefaultMaxPayload
	}
	ctx, stop := context.WithCancel(context.Background())
	e := &Emitter{
		app: app, opts: opts,
		requests: map[ID]*flushState{},
		payloads: map[ID][]string{},
		wake:     make(chan struct{}, 1),
		done:     make(chan struct{}),
		stop:     stop,
	}
	go e.run(ctx)
	return e
}

// Redactor returns the redactor the emitter applies, so a secret broker can
// register the values it resolves.
func (e *Emitter) Redactor() *Redactor { return e.opts.Redactor }

// NewID returns an id from the emitter's source, for request, operation and
// session ids.
func (e *Emitter) NewID() ID { return e.opts.IDs.New() }

// Emit redacts ev, fills its id, time and catalog fields when empty, and
// queues it. It never blocks on I/O. An event that fails Validate is not
// queued; Flush of its request reports why.
func (e *Emitter) Emit(ev Event) ID {
	if ev.ID.IsZero() {
		ev.ID = e.opts.IDs.New()
	}
	if ev.Time.IsZero() {
		ev.Time = e.opts.Now().UTC()
	}
	if info, ok := Lookup(ev.Kind); ok {
		if ev.Boundary == "" {
			ev.Boundary = info.Boundary
		}
		if ev.From == "" && ev.To == "" {
			ev.From, ev.To = info.From, info.To
		}
	}
	ev.Seq, ev.Prev, ev.Hash = 0, Hash{}, Hash{}
	e.tagged(&ev)
	var payloads []string
	if e.opts.Payloads != nil {
		e.opts.Redactor.RedactWhole(&ev)
		payloads = externalize(&ev, e.opts.MaxPayload)
	} else {
		e.opts.Redactor.Redact(&ev)
		unref(&ev)
	}
	verr := Validate(&ev)

	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		e.failLocked(ev.RequestID, ErrEmitterClosed)
	case verr != nil:
		e.opts.Logger.Error("event not emitted", "err", verr)
		e.failLocked(ev.RequestID, &Err{Code: CodeInvalidEvent, Msg: verr.Error()})
	default:
		e.queue = append(e.queue, ev)
		if len(payloads) > 0 {
			e.payloads[ev.ID] = payloads
		}
		e.stateLocked(ev.RequestID).n++
		e.all.n++
		switch {
		case len(e.queue) >= e.opts.MaxBatch:
			e.wakeSender()
		case !e.lingering:
			// Nobody waits for this event yet: let it gather company for a
			// moment, so one request's events share one commit.
			e.lingering = true
			e.linger = e.opts.AfterFunc(e.opts.Linger, e.wakeSender)
		}
	}
	return ev.ID
}

// wakeSender makes the sender send what is queued now.
func (e *Emitter) wakeSender() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

func (e *Emitter) stateLocked(req ID) *flushState {
	st := e.requests[req]
	if st == nil {
		st = &flushState{}
		e.requests[req] = st
	}
	return st
}

func (e *Emitter) failLocked(req ID, err error) {
	st := e.stateLocked(req)
	if st.err == nil {
		st.err = err
	}
	if e.all.err == nil {
		e.all.err = err
	}
}

// Flush waits until every event emitted so far for the request is durable.
// It returns the first error that lost one of them (a rejection, Close), or
// ctx's error when ctx ends first; the events then stay queued.
func (e *Emitter) Flush(ctx context.Context, req ID) error {
	e.mu.Lock()
	st := e.requests[req]
	if st == nil {
		e.mu.Unlock()
		return nil
	}
	return e.wait(ctx, st, func() {
		if e.requests[req] == st {
			delete(e.requests, req)
		}
	})
}

// FlushAll waits until every event emitted so far is durable.
func (e *Emitter) FlushAll(ctx context.Context) error {
	e.mu.Lock()
	return e.wait(ctx, &e.all, func() { e.all.err = nil })
}

// wait is called with e.mu held and releases it.
func (e *Emitter) wait(ctx context.Context, st *flushState, clear func()) error {
	if st.n == 0 {
		err := st.err
		clear()
		e.mu.Unlock()
		return err
	}
	ch := make(chan struct{})
	st.waiters = append(st.waiters, ch)
	e.mu.Unlock()
	e.wakeSender() // someone waits: send now
	select {
	case <-ch:
		e.mu.Lock()
		defer e.mu.Unlock()
		err := st.err
		if st.n == 0 {
			clear()
		}
		return err
	case <-ctx.Done():
		return fmt.Errorf("flush: %w", ctx.Err())
	}
}

// Close flushes what is queued (until ctx ends) and stops the emitter.
// Events emitted after Close are refused.
func (e *Emitter) Close(ctx context.Context) error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	err := e.FlushAll(ctx)
	e.stop()
	<-e.done
	if err != nil {
		e.mu.Lock()
		lost := len(e.queue)
		e.mu.Unlock()
		return fmt.Errorf("emitter close: %d events not durable: %w", lost, err)
	}
	return nil
}

func (e *Emitter) run(ctx context.Context) {
	defer close(e.done)
	for {
		select {
		case <-ctx.Done():
			return
		case <-e.wake:
		}
		for {
			e.mu.Lock()
			if e.lingering {
				// What the timer waited for goes now: were it left armed,
				// it would fire into the next request's events and send
				// them in a commit of their own.
				e.linger.Stop()
				e.lingering = false
			}
			n := min(len(e.queue), e.opts.MaxBatch)
			batch := e.queue[:n:n]
			e.mu.Unlock()
			if n == 0 {
				break
			}
			err := e.send(ctx, batch)
			e.mu.Lock()
			e.queue = e.queue[n:]
			if len(e.queue) == 0 {
				e.queue = nil // let the old backing array go
			}
			for i := range batch {
				delete(e.payloads, batch[i].ID)
			}
			e.settleLocked(batch, err)
			e.mu.Unlock()
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// send appends batch, retrying transient errors with backoff until it is
// stored, refused for good, or ctx ends.
func (e *Emitter) send(ctx context.Context, batch []Event) error {
	var payloads []string
	e.mu.Lock()
	for i := range batch {
		payloads = append(payloads, e.payloads[batch[i].ID]...)
	}
	e.mu.Unlock()
	backoff := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		var err error
		if len(payloads) > 0 {
			// Durable before any event that refers to them is appended:
			// an acknowledged event's payload is never missing.
			err = e.opts.Payloads.PutPayloads(ctx, payloads)
		}
		if err == nil {
			_, err = e.app.Append(ctx, batch)
		}
		if err == nil {
			return nil
		}
		// A coded error is a refusal for good unless its code says a retry
		// may succeed (events/codes.go); an error without a code (a broken
		// connection) is retried.
		var rej *Err
		if errors.As(err, &rej) && !retryable(rej.Code) {
			e.opts.Logger.Error("log refused events", "events", len(batch), "code", rej.Code, "err", rej.Msg)
			return err
		}
		if attempt == 1 || attempt%20 == 0 {
			e.opts.Logger.Warn("append failed; retrying", "events", len(batch), "attempt", attempt, "err", err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d events not durable: %w", len(batch), err)
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, time.Second)
	}
}

func (e *Emitter) settleLocked(batch []Event, err error) {
	for i := range batch {
		req := batch[i].RequestID
		st := e.requests[req]
		if err != nil {
			e.failLocked(req, err)
			st = e.requests[req]
		}
		st.n--
		e.all.n--
		if st.n == 0 {
			release(st)
			if st.err == nil {
				delete(e.requests, req) // a failed state waits for Flush to report it
			}
		}
	}
	if e.all.n == 0 {
		release(&e.all)
	}
}

func release(st *flushState) {
	for _, ch := range st.waiters {
		close(ch)
	}
	st.waiters = nil
}

// externalize replaces each attribute value of ev too long for an event
// (or spelled like a reference) with a reference to it, and returns the
// payloads to store. A value over limit is cut instead, on record. ev's
// attributes are the redactor's copy, changed in place.
func externalize(ev *Event, limit int) []string {
	var out []string
	for i, a := range ev.Attrs {
		v := a.Value
		if len(v) <= MaxAttrLen && !looksLikeRef(v) {
			continue
		}
		if len(v) > limit {
			ev.Attrs[i].Value = TooLarge(v, limit)
			continue
		}
		out = append(out, v)
		ev.Attrs[i].Value = PayloadRef(v)
	}
	return out
}

// unref marks a value spelled like a payload reference as a literal, for an
// emitter without a payload store: no event it sends refers to a payload
// it did not store.
func unref(ev *Event) {
	for i, a := range ev.Attrs {
		if _, _, ok := ParseRef(a.Value); ok {
			ev.Attrs[i].Value = "(literal) " + a.Value
		}
	}
}
