package hub

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// DefaultStream is the JetStream stream a cluster-attached hub uses when
// Cluster.Stream is empty.
const DefaultStream = "TRACEBRIDGE"

// streamSubjects are the subjects the stream captures: tb.log.<user>.<machine>.
const streamSubjects = "tb.log.>"

// Cluster attaches a hub to a NATS JetStream cluster (ADR 0012). Its appends
// go to a replicated stream and are acknowledged when the stream
// acknowledges them; its store is a collector: it materializes the whole
// stream, in stream order, from every machine.
type Cluster struct {
	URL string // nats://host:port, comma-separated for several servers
	// Creds is a .creds file (user JWT and nkey seed); NKey a file holding
	// an nkey seed. At most one.
	Creds, NKey string
	// CA, Cert and Key are PEM files: the servers' CA (TLS), and a client
	// certificate and key (mutual TLS).
	CA, Cert, Key string
	// Stream is the stream's name. Empty: DefaultStream.
	Stream string
	// User and Machine name this process's origin; its events go to
	// tb.log.<User>.<Machine>, which the cluster's permissions can pin to
	// the credentials. Empty: the OS user and the host name.
	User, Machine string
}

func (c *Cluster) stream() string {
	if c.Stream == "" {
		return DefaultStream
	}
	return c.Stream
}

// origin is who this process publishes as: subject tokens.
func (c *Cluster) origin() (user, machine string) {
	user, machine = c.User, c.Machine
	if user == "" {
		user = os.Getenv("USER")
	}
	if machine == "" {
		machine, _ = os.Hostname()
	}
	return token(user), token(machine)
}

// token makes s one NATS subject token.
func token(s string) string {
	s = strings.Map(func(r rune) rune {
		if r <= ' ' || r == '.' || r == '*' || r == '>' || r > 0x7e {
			return '_'
		}
		return r
	}, s)
	if s == "" {
		return "_"
	}
	return s
}

// link is a hub's connection to the cluster.
type link struct {
	cfg     *Cluster
	nc      *nats.Conn
	js      jetstream.JetStream
	subject string
	origin  events.Attrs // the origin attributes stamped on every event
	log     *slog.Logger

	// denied is the last permissions violation the server reported: a
	// publish it dropped, so an ack that never comes can say why.
	denied atomic.Pointer[string]

	// materialized is the last stream seq the store holds; wait parks on
	// advanced until it moves.
	materialized atomic.Uint64
	mu           sync.Mutex
	advanced     chan struct{}
}

// dial connects to the cluster and makes sure the stream exists. data is
// the data dir, recorded in each event's origin.
func dial(ctx context.Context, cfg *Cluster, data DataDir, name string, log *slog.Logger) (*link, error) {
	user, machine := cfg.origin()
	l := &link{cfg: cfg, subject: "tb.log." + user + "." + machine, log: log, advanced: make(chan struct{}),
		origin: events.A(events.AttrOriginUser, user, events.AttrOriginMachine, machine, events.AttrOriginData, string(data))}
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) || strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
				msg := err.Error()
				l.denied.Store(&msg)
			}
			log.Warn("cluster", "err", err)
		}),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			log.Warn("cluster connection lost; side-effecting tools are refused until it is back", "err", err)
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) { log.Info("cluster connection back", "server", nc.ConnectedUrlRedacted()) }),
	}
	switch {
	case cfg.Creds != "" && cfg.NKey != "":
		return nil, errors.New("cluster: give --nats-creds or --nats-nkey, not both")
	case cfg.Creds != "":
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	case cfg.NKey != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKey)
		if err != nil {
			return nil, fmt.Errorf("cluster: nkey seed %s: %w", cfg.NKey, err)
		}
		opts = append(opts, o)
	}
	if cfg.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.CA))
	}
	if cfg.Cert != "" || cfg.Key != "" {
		opts = append(opts, nats.ClientCert(cfg.Cert, cfg.Key))
	}
	nc, err := nats.Connect(cfg.URL, opts...)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to %s: %w (is the cluster up, and are the credentials right?)", cfg.URL, err)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(4096), jetstream.WithPublishAsyncTimeout(5*time.Second))
	if err != nil {
		nc.Close()
		return nil, err
	}
	l.nc, l.js = nc, js
	if err := l.ensureStream(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	return l, nil
}

// ensureStream creates the stream when it is missing: file storage,
// replicas min(3, the servers the client knows of), a two-minute window in
// which a re-sent event id is dropped, and no purge and no message deletion
// by anyone (deny_purge, deny_delete: evidence is archived by collectors,
// never removed from the stream). An existing stream is used as it is,
// given those two protections when it lacks them and this member may.
func (l *link) ensureStream(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	name := l.cfg.stream()
	// A cluster that just started has no JetStream leader for a moment:
	// its API requests time out or find no responders. Retry those.
	for {
		err := l.createStream(ctx, name)
		if err == nil || ctx.Err() != nil {
			return err
		}
		l.log.Debug("cluster: stream not ready yet", "stream", name, "err", err)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func (l *link) createStream(ctx context.Context, name string) error {
	try, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if s, err := l.js.Stream(try, name); err == nil {
		l.protect(try, s)
		return nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("cluster: stream %s: %w", name, err)
	}
	replicas := min(3, max(1, len(l.nc.Servers())))
	_, err := l.js.CreateStream(try, jetstream.StreamConfig{
		Name: name, Subjects: []string{streamSubjects}, Storage: jetstream.FileStorage,
		Replicas: replicas, Duplicates: 2 * time.Minute, MaxMsgSize: events.MaxEventSize + 1024,
		DenyDelete: true, DenyPurge: true,
		Description: "tracebridge events (ADR 0012)",
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return fmt.Errorf("cluster: create stream %s (replicas %d): %w", name, replicas, err)
	}
	if err == nil {
		l.log.Info("cluster: stream created", "stream", name, "replicas", replicas)
	}
	return nil
}

// protect gives an existing stream deny_purge and deny_delete when it
// lacks them (a stream made before they were set, or by hand); a member
// not allowed to update it says so once.
func (l *link) protect(ctx context.Context, s jetstream.Stream) {
	cfg := s.CachedInfo().Config
	if cfg.DenyPurge && cfg.DenyDelete {
		return
	}
	cfg.DenyPurge, cfg.DenyDelete = true, true
	if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
		l.log.Warn("cluster: the stream lets members purge it or delete its messages, and this member may not change that: set deny_purge and deny_delete on it (docs/cluster.md)",
			"stream", cfg.Name, "err", err)
		return
	}
	l.log.Info("cluster: the stream now refuses purges and message deletions", "stream", cfg.Name)
}

// appendRetryFor bounds how long append keeps re-publishing what the
// stream did not acknowledge while the connection is up (a stream leader
// being elected after a node died takes a few seconds).
const appendRetryFor = 10 * time.Second

// batchHeader marks a stream message that carries several events (an
// events batch frame); a message without it carries one event (as every
// message did before, ADR 0012).
const batchHeader = "Tb-Batch"

// append publishes evs, several to a message (one JetStream proposal, not
// one per event), and returns each event's stream seq (its message's) once
// the stream has acknowledged every message: the durable point, with the
// servers' sync_interval always. What is not acknowledged is published again
// (a message's id names its first event and its count, so the stream keeps
// one copy; the collector's store drops an event id it holds) until
// appendRetryFor or ctx ends; with the connection down it fails at once.
func (l *link) append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	var msgs []*nats.Msg
	var of []int // of[i]: the message event i travels in
	var batch [][]byte
	size, first := 0, 0
	flush := func(end int) {
		if len(batch) == 0 {
			return
		}
		m := nats.NewMsg(l.subject)
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s+%d", evs[first].ID, len(batch)))
		m.Header.Set(batchHeader, "1")
		m.Data = events.EncodeRecords(batch)
		msgs = append(msgs, m)
		batch, size, first = batch[:0:0], 0, end
	}
	for i := range evs {
		if err := events.Validate(&evs[i]); err != nil {
			return nil, &events.Err{Code: events.CodeInvalidEvent, Msg: err.Error()}
		}
		e := evs[i]
		e.Seq, e.Prev, e.Hash = 0, events.Hash{}, events.Hash{}
		e.Attrs = evs[i].Attrs.Clone()
		for k, v := range l.origin.All() {
			e.Attrs.Set(k, v) // whatever the sender claimed, this hub says where it came from
		}
		rec := events.Encode(&e)
		// A message stays within what the stream was made to take
		// (MaxEventSize + 1 KiB), whoever made it.
		if size+len(rec)+binary.MaxVarintLen32 > events.MaxEventSize || len(batch) == events.MaxBatchEvents {
			flush(i)
		}
		batch = append(batch, rec)
		size += len(rec) + binary.MaxVarintLen32
		of = append(of, len(msgs))
	}
	flush(len(evs))
	acked := make([]uint64, len(msgs))
	giveUp := time.Now().Add(appendRetryFor)
	backoff := 50 * time.Millisecond
	for {
		if !l.nc.IsConnected() {
			return nil, &events.Err{Code: events.CodeLogUnavailable,
				Msg: fmt.Sprintf("the cluster at %s is unreachable (%s); nothing was acknowledged", l.cfg.URL, l.nc.Status())}
		}
		lastErr := l.publish(ctx, msgs, acked)
		if lastErr == nil {
			seqs := make([]uint64, len(evs))
			for i, m := range of {
				seqs[i] = acked[m]
			}
			return seqs, nil
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("append: %w", ctx.Err())
		}
		if time.Now().Add(backoff).After(giveUp) || l.denied.Load() != nil {
			return nil, l.unavailable(lastErr) // a permissions violation will not pass on a retry
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("append: %w", ctx.Err())
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// publish sends the messages whose seq is still 0 and fills in the seqs the
// stream acknowledges; it returns the last failure, if any.
func (l *link) publish(ctx context.Context, msgs []*nats.Msg, seqs []uint64) error {
	acks := make([]jetstream.PubAckFuture, len(msgs))
	var lastErr error
	for i, m := range msgs {
		if seqs[i] != 0 {
			continue
		}
		f, err := l.js.PublishMsgAsync(m, jetstream.WithExpectStream(l.cfg.stream()))
		if err != nil {
			lastErr = err
			continue
		}
		acks[i] = f
	}
	for i, f := range acks {
		if f == nil {
			continue
		}
		select {
		case ack := <-f.Ok():
			seqs[i] = ack.Sequence
		case err := <-f.Err():
			lastErr = err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return lastErr
}

func (l *link) unavailable(err error) error {
	msg := "the cluster did not acknowledge the events: " + err.Error()
	if d := l.denied.Load(); d != nil {
		msg += " (the server reported: " + *d + "; this user may not publish to " + l.subject + ": check --nats-user and the credentials)"
	}
	return &events.Err{Code: events.CodeLogUnavailable, Msg: msg + "; nothing of them was acknowledged"}
}

func slicesMax(s []uint64) uint64 {
	var m uint64
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

// wait returns once the store holds stream seq want, ctx ends or within passes.
func (l *link) wait(ctx context.Context, want uint64, within time.Duration) {
	t := time.NewTimer(within)
	defer t.Stop()
	for {
		l.mu.Lock()
		ch := l.advanced
		l.mu.Unlock()
		if l.materialized.Load() >= want {
			return
		}
		select {
		case <-ch:
		case <-t.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

func (l *link) advance(seq uint64) {
	l.materialized.Store(seq)
	l.mu.Lock()
	close(l.advanced)
	l.advanced = make(chan struct{})
	l.mu.Unlock()
}

// collect materializes the stream into st, in stream order, from the
// position st recorded: each batch of messages is stored with its last
// stream seq in one transaction, so a collector killed at any moment
// resumes after what it holds, without gap or duplicate. It returns when
// stop closes.
//
// A message that is not a valid event, or whose origin is not the subject
// it was published on, is not stored; record is told (a log.stream.refused,
// which the hub aggregates). So is a gap: stream messages gone before this
// collector reached them (log.stream.gap; the store keeps the count for
// verify).
func (l *link) collect(st *store.Store, stop <-chan struct{}, refused func(events.Event)) {
	backoff := 100 * time.Millisecond
	for {
		err := l.collectOnce(st, stop, refused)
		select {
		case <-stop:
			return
		default:
		}
		l.log.Warn("collector stopped; resuming from the store's position", "err", err, "in", backoff)
		select {
		case <-stop:
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

// maxCollectBatch bounds the messages stored in one transaction.
const maxCollectBatch = 2048

func (l *link) collectOnce(st *store.Store, stop <-chan struct{}, refused func(events.Event)) error {
	src, err := st.Source()
	if err != nil {
		return err
	}
	name := l.cfg.stream()
	if src.Stream != "" && src.Stream != name {
		return fmt.Errorf("the store materializes stream %s, not %s", src.Stream, name)
	}
	l.advance(src.Seq)
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{streamSubjects}, DeliverPolicy: jetstream.DeliverAllPolicy}
	if src.Seq > 0 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, src.Seq+1
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cons, err := l.js.OrderedConsumer(ctx, name, cfg)
	if err != nil {
		return fmt.Errorf("consumer on %s: %w", name, err)
	}
	msgs := make(chan jetstream.Msg, maxCollectBatch)
	cc, err := cons.Consume(func(m jetstream.Msg) {
		select {
		case msgs <- m:
		case <-ctx.Done():
		}
	})
	if err != nil {
		return fmt.Errorf("consume %s: %w", name, err)
	}
	defer cc.Stop()
	last := src.Seq
	batch := make([]jetstream.Msg, 0, maxCollectBatch)
	for {
		batch = batch[:0]
		select {
		case m := <-msgs:
			batch = append(batch, m)
		case <-ctx.Done():
			return ctx.Err()
		}
	drain:
		for len(batch) < maxCollectBatch {
			select {
			case m := <-msgs:
				batch = append(batch, m)
			default:
				break drain
			}
		}
		evs := make([]events.Event, 0, len(batch))
		var refusals []events.Event
		for _, m := range batch {
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("message without metadata: %w", err)
			}
			seq := md.Sequence.Stream
			if seq <= last {
				continue // the ordered consumer re-delivers after a reset
			}
			if seq != last+1 {
				l.log.Warn("stream messages are gone (deleted or past the stream's limits); the collector goes on after them",
					"stream", name, "from", last+1, "to", seq-1)
				if err := st.RecordLoss(last+1, seq-1); err != nil {
					return err
				}
				refusals = append(refusals, events.Event{Kind: events.KindStreamGap, Outcome: events.Error, Code: events.CodeStreamGap,
					Attrs: events.A("stream", name, "from", fmt.Sprint(last+1), "to", fmt.Sprint(seq-1), "count", fmt.Sprint(seq-1-last))})
			}
			last = seq
			got, code, err := checkMessage(m.Subject(), m.Headers().Get(batchHeader) != "", m.Data())
			if err != nil {
				l.log.Warn("collector: refused a stream message", "stream", name, "seq", seq, "subject", m.Subject(), "code", code, "err", err)
				refusals = append(refusals, events.Event{Kind: events.KindStreamRefused, Outcome: events.Denied, Code: code,
					Attrs: events.A("stream", name, "streamSeq", fmt.Sprint(seq), "subject", m.Subject(), "error", err.Error())})
				continue
			}
			evs = append(evs, got...)
		}
		if last == l.materialized.Load() {
			continue
		}
		if _, err := st.AppendFrom(ctx, evs, store.Source{Stream: name, Seq: last}); err != nil {
			return err
		}
		l.advance(last)
		for _, e := range refusals {
			refused(e)
		}
	}
}

// checkMessage decodes a stream message (one event, or a batch of them)
// and holds each event to the subject it was published on; one event that
// fails refuses the whole message.
func checkMessage(subject string, batch bool, data []byte) ([]events.Event, events.Code, error) {
	if !batch {
		e, code, err := check(subject, data)
		if err != nil {
			return nil, code, err
		}
		return []events.Event{e}, "", nil
	}
	recs, err := events.SplitBatch(data)
	if err != nil {
		return nil, events.CodeMalformedAppend, err
	}
	out := make([]events.Event, 0, len(recs))
	for i, r := range recs {
		e, code, err := check(subject, r)
		if err != nil {
			return nil, code, fmt.Errorf("batch record %d: %w", i, err)
		}
		out = append(out, e)
	}
	return out, "", nil
}

// check decodes a stream message into an event and holds it to the
// subject it was published on (tb.log.<user>.<machine>, which the
// cluster's permissions tie to the publisher's credentials).
func check(subject string, data []byte) (events.Event, events.Code, error) {
	e, err := events.Decode(data)
	if err == nil {
		err = events.Validate(&e)
	}
	if err != nil {
		return e, events.CodeMalformedAppend, err
	}
	parts := strings.Split(subject, ".")
	if len(parts) != 4 || parts[0] != "tb" || parts[1] != "log" {
		return e, events.CodeOriginMismatch, fmt.Errorf("subject %q is not tb.log.<user>.<machine>", subject)
	}
	if u, m := e.Attrs.Get(events.AttrOriginUser), e.Attrs.Get(events.AttrOriginMachine); u != parts[2] || m != parts[3] {
		return e, events.CodeOriginMismatch, fmt.Errorf("event %s claims origin %s on %s but was published on %s", e.ID, u, m, subject)
	}
	return e, "", nil
}

func (l *link) close() {
	l.nc.Drain()
}
