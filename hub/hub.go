package hub

import (
	"cmp"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/loopback"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// maxHandlers bounds the requests a hub serves at once. Past it the NATS
// subscription buffers, then drops, and the senders time out and retry.
const maxHandlers = 256

// Hub serves one store to the processes of its data dir.
type Hub struct {
	dir  DataDir
	st   *store.Store
	key  ed25519.PrivateKey
	log  *slog.Logger
	now  func() time.Time
	ns   *server.Server
	nc   *nats.Conn
	info Info

	sem chan struct{}
	wg  sync.WaitGroup
	// serving guards wg: a handler joins it only while the hub serves, so
	// Close's Wait never races a late message's Add (nats.go's Unsubscribe
	// does not wait for a callback already running).
	serving sync.Mutex
	closing bool
	subs    []*nats.Subscription
	stop    chan struct{}
	done    chan struct{}

	lastCheckpoint    atomic.Uint64
	checkpointFailing bool // touched by the background loop, then by Close after it ends

	proj     *projections.Projector
	uploads  uploads // long payloads arriving in parts (payload.go)
	projWake chan struct{}
	projDone chan struct{}

	cl          *link         // nil unless on a cluster
	collectDone chan struct{} // closed when the collector stops
}

// append stores evs: in the store, or on a cluster in the stream (and
// then, shortly, in the store by the collector).
func (h *Hub) append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	if h.cl == nil {
		return h.st.Append(ctx, evs)
	}
	for i := range evs {
		if len(evs[i].Refs()) > 0 { // refused before the stream, where collectors would stall on it
			return nil, &events.Err{Code: events.CodePayloadMissing, Msg: errNoPayloadsOnCluster.Error()}
		}
	}
	seqs, err := h.cl.append(ctx, evs)
	if err == nil {
		h.cl.wait(ctx, slicesMax(seqs), 2*time.Second) // read your writes, bounded
	}
	return seqs, err
}

// startHub runs a hub for st, which the caller opened (and so holds the
// lock of). publish is set to the hub's republisher.
func startHub(dir DataDir, st *store.Store, publish *atomic.Pointer[Hub], opts Options) (_ *Hub, err error) {
	key, err := store.LoadSigningKey(dir.SigningKey())
	if err != nil {
		return nil, err
	}
	token := make([]byte, 24)
	if _, err := rand.Read(token); err != nil {
		return nil, err
	}
	h := &Hub{
		dir: dir, st: st, key: key, log: opts.Logger, now: opts.Now,
		sem: make(chan struct{}, maxHandlers), stop: make(chan struct{}), done: make(chan struct{}),
		proj: projections.New(st), projWake: make(chan struct{}, 1), projDone: make(chan struct{}),
	}
	if opts.Cluster != nil {
		if err := h.joinCluster(opts); err != nil {
			return nil, err
		}
		started := false
		defer func() {
			if !started {
				close(h.stop)
				<-h.collectDone
				h.cl.close()
			}
		}()
		defer func() { started = err == nil }()
	}
	h.ns, err = server.NewServer(&server.Options{
		ServerName:    "tracebridge-hub",
		Host:          "127.0.0.1", // never 0.0.0.0
		Port:          server.RANDOM_PORT,
		Authorization: hex.EncodeToString(token),
		NoSigs:        true, // else SIGTERM calls os.Exit and skips the final commit
		NoLog:         true,
		HTTPPort:      0,       // no monitoring port
		MaxPayload:    1 << 20, // long payloads travel in parts (payload.go)
	})
	if err != nil {
		return nil, fmt.Errorf("hub: nats: %w", err)
	}
	h.ns.SetLoggerV2(natsLogger{opts.Logger}, false, false, false)
	h.ns.Start() // does not block
	if !natsReady(h.ns, 10*time.Second) {
		h.ns.Shutdown()
		return nil, errors.New("hub: embedded NATS did not start within 10s")
	}
	h.info = Info{URL: h.ns.ClientURL(), Token: hex.EncodeToString(token), PID: os.Getpid(), Started: h.now().UTC()}
	if h.cl != nil {
		h.info.Stream = h.cl.cfg.stream()
	}
	h.nc, err = nats.Connect("", nats.InProcessServer(h.ns), nats.Token(h.info.Token), nats.Name("tracebridge-hub"), nats.NoReconnect())
	if err != nil {
		h.ns.Shutdown()
		return nil, fmt.Errorf("hub: connect in-process: %w", err)
	}
	publish.Store(h)
	for subj, fn := range map[string]nats.MsgHandler{subjAppend: h.serveAppend, subjQuery: h.serveQuery, subjPayloadPut: h.servePayloads, subjPayloadPart: h.servePart} {
		sub, err := h.nc.Subscribe(subj, h.bounded(fn))
		if err != nil {
			h.shutdownNATS()
			return nil, fmt.Errorf("hub: subscribe %s: %w", subj, err)
		}
		h.subs = append(h.subs, sub)
	}
	if err := h.nc.Flush(); err != nil {
		h.shutdownNATS()
		return nil, err
	}
	if err := dir.writeInfo(h.info); err != nil {
		h.shutdownNATS()
		return nil, fmt.Errorf("hub: write %s: %w", dir.HubFile(), err)
	}
	h.record(events.Event{Kind: events.KindHubStarted, Outcome: events.OK,
		Attrs: events.A("pid", fmt.Sprint(h.info.PID), "url", h.info.URL)})
	go h.background()
	go h.project()
	opts.Logger.Debug("hub started", "data", string(dir), "url", h.info.URL, "pid", h.info.PID)
	return h, nil
}

// bounded runs fn on its own goroutine, at most maxHandlers at once, so the
// subscription keeps reading while slow requests (a commit, a verify) run.
func (h *Hub) bounded(fn nats.MsgHandler) nats.MsgHandler {
	return func(m *nats.Msg) {
		select {
		case h.sem <- struct{}{}:
		case <-h.stop:
			return
		}
		h.serving.Lock()
		if h.closing {
			h.serving.Unlock()
			<-h.sem
			return
		}
		h.wg.Add(1)
		h.serving.Unlock()
		go func() {
			defer func() { <-h.sem; h.wg.Done() }()
			fn(m)
		}()
	}
}

// publish republishes committed events for live followers. It is the
// store's Committed callback, so it runs on the writer in seq order.
//
// An event nobody follows is not published: a follower subscribes before it
// reads the store (Follow), so what it did not subscribe in time for, it
// reads there. Under the gateway benchmark nobody follows, and publishing
// ten events a call cost the writer and the NATS server 5% of the bridge's
// CPU (issue 47).
func (h *Hub) publish(stored []events.Event, records [][]byte) {
	h.wake()
	acc := h.ns.GlobalAccount()
	for i := range stored {
		subj := eventSubject(&stored[i])
		if !acc.SubscriptionInterest(subj) {
			continue
		}
		if err := h.nc.Publish(subj, records[i]); err != nil {
			h.log.Warn("republish failed; followers will catch up from the store", "seq", stored[i].Seq, "err", err)
			return
		}
	}
}

// record appends one of the hub's own events.
func (h *Hub) record(e events.Event) {
	e.ID, e.Time = events.NewID(), h.now().UTC()
	info, _ := events.Lookup(e.Kind)
	e.Boundary, e.From, e.To = info.Boundary, info.From, info.To
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var err error
	if h.cl != nil {
		_, err = h.cl.append(ctx, []events.Event{e})
	} else {
		_, err = h.st.Append(ctx, []events.Event{e})
	}
	if err != nil {
		h.log.Warn("hub could not record its own event", "kind", e.Kind, "err", err)
	}
}

// background verifies the whole chain once (refusing appends if it is
// broken) and then signs a checkpoint every minute while the head moves.
func (h *Hub) background() {
	defer close(h.done)
	h.verifyAtStart()
	t := time.NewTicker(time.Minute)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
			h.writeCheckpoint()
		}
	}
}

func (h *Hub) verifyAtStart() {
	var cps []store.Checkpoint
	if cp, err := store.ReadCheckpoint(h.dir.Checkpoint(), h.key.Public().(ed25519.PublicKey)); err == nil {
		cps = append(cps, cp)
	} else if !errors.Is(err, os.ErrNotExist) {
		h.log.Warn("ignoring the data dir's checkpoint", "err", err)
	}
	start := time.Now()
	rep, err := h.st.Verify(cps...)
	if err != nil {
		h.log.Error("verify at start failed", "err", err)
		return
	}
	if !rep.OK() {
		msg := rep.String() + "; appends are refused until the store is repaired (run `tracebridge verify`)"
		h.st.Refuse(&events.Err{Code: events.CodeChainBroken, Msg: msg})
		h.log.Error("event log is broken", "firstBad", rep.FirstBad, "problem", rep.Problem)
		return
	}
	h.log.Debug("event log verified", "events", rep.Events, "took", time.Since(start))
}

// writeCheckpoint signs the head into the data dir's checkpoint.json when it
// moved since the last one.
func (h *Hub) writeCheckpoint() {
	if rej := h.st.Refusal(); rej != nil && rej.Code == events.CodeChainBroken {
		return // never sign a broken chain
	}
	seq, _ := h.st.Head()
	if seq == 0 || seq == h.lastCheckpoint.Load() {
		return
	}
	cp := h.st.SignCheckpoint(h.key, h.now())
	if err := store.WriteCheckpoint(h.dir.Checkpoint(), cp); err != nil {
		// The last checkpoint.json stands, whole (it is replaced by a
		// rename). The log still takes events: say so there, once per
		// failing spell.
		h.log.Warn("could not write checkpoint; the previous one stands", "path", h.dir.Checkpoint(), "err", err)
		if !h.checkpointFailing {
			h.checkpointFailing = true
			h.record(events.Event{Kind: events.KindCheckpointFailed, Outcome: events.Error, Code: events.CodeLogUnavailable,
				Attrs: events.A("error", err.Error(), "seq", fmt.Sprint(cp.Seq))})
		}
		return
	}
	h.checkpointFailing = false
	h.lastCheckpoint.Store(cp.Seq)
}

// natsReady waits until ns takes connections. The server's own wait sleeps
// 25 ms between checks when the first one fails, which it does right after
// Start: that was half of a bridge's start-up. This checks without sleeping
// for up to 1 ms at a time.
func natsReady(ns *server.Server, within time.Duration) bool {
	for end := time.Now().Add(within); time.Now().Before(end); time.Sleep(200 * time.Microsecond) {
		if ns.ReadyForConnections(time.Millisecond) {
			return true
		}
	}
	return false
}

// Info says how to reach the hub.
func (h *Hub) Info() Info { return h.info }

// Close stops serving, lets in-flight requests finish, records the stop,
// signs a final checkpoint, removes hub.json and releases the store.
func (h *Hub) Close() error {
	for _, s := range h.subs {
		s.Unsubscribe()
	}
	close(h.stop)
	h.serving.Lock()
	h.closing = true
	h.serving.Unlock()
	h.wg.Wait()
	<-h.done
	<-h.projDone
	h.record(events.Event{Kind: events.KindHubStopped, Outcome: events.OK})
	if h.cl != nil {
		<-h.collectDone
		h.cl.close()
	}
	if _, err := h.proj.CatchUp(context.Background(), nil); err != nil {
		h.log.Warn("projections: final catch-up failed; the next hub catches up", "err", err)
	}
	h.writeCheckpoint()
	h.dir.removeInfo(h.info.Token) // before the lock goes, so a successor's file is never removed
	err := h.st.Close()
	h.shutdownNATS()
	return err
}

// joinCluster connects to the cluster and starts the collector. A store
// that already holds a log of its own cannot also hold the stream's.
func (h *Hub) joinCluster(opts Options) error {
	src, err := h.st.Source()
	if err != nil {
		return err
	}
	if head, _ := h.st.Head(); head > 0 && src.Stream == "" {
		return fmt.Errorf("data dir %s holds a local event log (%d events); a cluster collector materializes the stream into a store of its own: use a new --data", h.dir, head)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	h.cl, err = dial(ctx, opts.Cluster, h.dir, cmp.Or(opts.Name, "tracebridge-hub"), opts.Logger)
	if err != nil {
		return err
	}
	h.collectDone = make(chan struct{})
	// A member can flood the stream with messages every collector refuses:
	// the first of each code and origin are recorded, the rest counted
	// (loopback.Refusals), as every refusal is.
	refusals := loopback.NewRefusals(events.KindStreamRefused, h.now, func(e events.Event) events.ID { h.record(e); return events.ID{} })
	go func() {
		defer close(h.collectDone)
		ctx, cancel := context.WithCancel(context.Background())
		flushed := make(chan struct{})
		go func() { refusals.Run(ctx); close(flushed) }()
		h.cl.collect(h.st, h.stop, func(e events.Event) {
			if e.Kind == events.KindStreamRefused {
				refusals.Record(e.Code, e.Attrs.Get("subject"), e.Attrs.Map())
				return
			}
			h.record(e)
		})
		cancel()
		<-flushed
	}()
	return nil
}

func (h *Hub) shutdownNATS() {
	if h.nc != nil {
		h.nc.Flush()
		h.nc.Close()
	}
	h.ns.Shutdown()
	h.ns.WaitForShutdown()
}

// natsLogger routes the embedded server's messages to slog (stderr), never
// stdout.
type natsLogger struct{ l *slog.Logger }

func (n natsLogger) Noticef(f string, a ...any) { n.l.Debug("nats: " + fmt.Sprintf(f, a...)) }
func (n natsLogger) Warnf(f string, a ...any)   { n.l.Warn("nats: " + fmt.Sprintf(f, a...)) }
func (n natsLogger) Fatalf(f string, a ...any)  { n.l.Error("nats: " + fmt.Sprintf(f, a...)) }
func (n natsLogger) Errorf(f string, a ...any)  { n.l.Error("nats: " + fmt.Sprintf(f, a...)) }
func (n natsLogger) Debugf(f string, a ...any)  { n.l.Debug("nats: " + fmt.Sprintf(f, a...)) }
func (n natsLogger) Tracef(f string, a ...any)  {}
