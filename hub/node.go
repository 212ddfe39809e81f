package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// Role says what a Node may become.
type Role int

const (
	// Elect: become the hub when the store is free, else attach to it.
	// Bridges, hosts and `serve` use it.
	Elect Role = iota
	// Read: attach to the live hub, else open the store read-only. The
	// operator CLI uses it; it never becomes the hub.
	Read
)

// Options configures Open. Only Dir is required.
type Options struct {
	Dir  DataDir
	Role Role
	// Logger receives election and hub messages. Nil: slog.Default().
	Logger *slog.Logger
	// Timeout bounds one election or attach: how long to keep trying while
	// the store is locked and no hub answers. Zero: 15s.
	Timeout time.Duration
	// RequestTimeout bounds one request to the hub. Zero: 5s.
	RequestTimeout time.Duration
	// Now is the clock for hub events and checkpoints. Nil: time.Now.
	Now func() time.Time
	// Name labels this process's NATS connection.
	Name string
	// Cluster, when set, makes a hub this node starts publish to (and
	// materialize from) a JetStream stream instead of its own store alone;
	// attaching to a hub of the data dir that is not on the same stream is
	// an error.
	Cluster *Cluster
}

// ErrNoHub is returned by a Read node's live calls (Follow) when no hub
// runs for the data dir.
var ErrNoHub = errors.New("no hub is running for this data dir (start one with `tracebridge serve`, or any `tracebridge mcp`)")

// Node is one process's handle on its data dir's event log. It is an
// events.Appender. Its methods are safe for concurrent use.
type Node struct {
	opts    Options
	publish atomic.Pointer[Hub]

	mu     sync.Mutex
	cur    backend
	closed bool
}

var _ events.Appender = (*Node)(nil)

// Open elects or attaches (per opts.Role) and returns the node.
func Open(ctx context.Context, opts Options) (*Node, error) {
	if opts.Dir == "" {
		return nil, errors.New("hub: no data dir")
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 15 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 5 * time.Second
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if err := opts.Dir.Ensure(); err != nil {
		return nil, err
	}
	n := &Node{opts: opts}
	if _, err := n.link(ctx); err != nil {
		return nil, err
	}
	return n, nil
}

// IsHub reports whether this process currently runs the hub.
func (n *Node) IsHub() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.cur.(*local)
	return ok && l.hub != nil
}

// Online reports whether the node reaches a live hub (its own or another's).
func (n *Node) Online() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.cur != nil && n.cur.conn() != nil && !n.cur.dead()
}

// Hub describes the hub this node uses (its own or another process's);
// ok is false when the node reads the store offline.
func (n *Node) Hub() (info Info, ok bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.cur == nil || n.cur.dead() {
		return Info{}, false
	}
	return n.cur.hubInfo()
}

// link returns the current backend, electing or attaching again if the hub
// it used is gone.
func (n *Node) link(ctx context.Context) (backend, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil, &events.Err{Code: events.CodeLogUnavailable, Msg: "node closed"}
	}
	if n.cur != nil && !n.cur.dead() {
		return n.cur, nil
	}
	if n.cur != nil {
		n.cur.close()
		n.cur = nil
		n.opts.Logger.Info("hub connection lost; electing again", "data", string(n.opts.Dir))
	}
	b, err := n.elect(ctx)
	if err != nil {
		return nil, err
	}
	n.cur = b
	return b, nil
}

// elect takes the store lock (Elect) or attaches to the hub that holds it,
// retrying while the store is locked and no hub answers (a hub starting or
// stopping, a read-only verify) until opts.Timeout.
func (n *Node) elect(ctx context.Context) (backend, error) {
	dir, log := n.opts.Dir, n.opts.Logger
	deadline := time.Now().Add(n.opts.Timeout)
	var lastErr error
	for attempt := 0; ; attempt++ {
		if n.opts.Role == Elect {
			st, err := store.Open(dir.Store(), store.Options{Logger: log, Committed: n.republish})
			if err == nil {
				h, err := startHub(dir, st, &n.publish, n.opts)
				if err != nil {
					st.Close()
					return nil, err
				}
				return &local{st: st, hub: h, key: h.key, now: n.opts.Now}, nil
			}
			if !errors.Is(err, store.ErrLocked) {
				return nil, err
			}
			lastErr = err
		}
		if info, err := dir.readInfo(); err == nil {
			r, err := n.attach(ctx, info)
			if err == nil {
				return r, nil
			}
			lastErr = err
		} else {
			lastErr = err
		}
		if n.opts.Role == Read {
			st, err := store.Open(dir.Store(), store.Options{ReadOnly: true, Logger: log})
			if err == nil {
				key, _ := store.LoadSigningKey(dir.SigningKey())
				return &local{st: st, key: key, now: n.opts.Now}, nil
			}
			// Locked: a hub is starting or stopping. Missing: the first
			// process has not created the log yet. Either way, wait.
			if !errors.Is(err, store.ErrLocked) && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
			lastErr = err
		}
		if time.Now().After(deadline) {
			if errors.Is(lastErr, os.ErrNotExist) {
				return nil, fmt.Errorf("%w: data dir %s has no event log yet and no hub answered within %v; start one (`tracebridge serve`, `tracebridge up --root DIR`) or check --data",
					ErrHubUnavailable, dir, n.opts.Timeout)
			}
			return nil, fmt.Errorf("%w: data dir %s is locked but no hub answered within %v (last: %v); if no tracebridge process is running, check for a stale process holding %s",
				ErrHubUnavailable, dir, n.opts.Timeout, lastErr, dir.Store())
		}
		if attempt == 10 {
			log.Info("waiting for the hub of the data dir", "data", string(dir), "last", lastErr)
		}
		sleep := time.Duration(10+rand.IntN(40)) * time.Millisecond * time.Duration(min(attempt+1, 5))
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(sleep):
		}
	}
}

// attach connects to the hub in info and checks that it answers.
func (n *Node) attach(ctx context.Context, info Info) (*remote, error) {
	nc, err := nats.Connect(info.URL, nats.Token(info.Token), nats.NoReconnect(),
		nats.Timeout(2*time.Second), nats.Name(n.opts.Name),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			n.opts.Logger.Warn("hub connection", "err", err)
		}))
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", info.URL, err)
	}
	r := &remote{nc: nc, info: info, timeout: n.opts.RequestTimeout}
	if _, _, err := r.head(ctx); err != nil {
		nc.Close()
		return nil, err
	}
	if c := n.opts.Cluster; c != nil && info.Stream != c.stream() {
		nc.Close()
		return nil, fmt.Errorf("the hub of data dir %s (pid %d) is not attached to the cluster's stream %s (its stream: %q); stop it, or use another --data",
			n.opts.Dir, info.PID, c.stream(), info.Stream)
	}
	return r, nil
}

func (n *Node) republish(stored []events.Event, records [][]byte) {
	if h := n.publish.Load(); h != nil {
		h.publish(stored, records)
	}
}

// Append stores evs through the hub (or directly, on the hub) and returns
// their seqs once they are durable.
func (n *Node) Append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	b, err := n.link(ctx)
	if err != nil {
		return nil, err
	}
	return b.Append(ctx, evs)
}

// query runs an idempotent read, linking again and retrying when the hub
// it reached goes away mid-request (another process takes over).
func query[T any](ctx context.Context, n *Node, fn func(backend) (T, error)) (T, error) {
	var zero T
	for attempt := 1; ; attempt++ {
		b, err := n.link(ctx)
		if err != nil {
			return zero, err
		}
		v, err := fn(b)
		if err == nil || !errors.Is(err, ErrHubUnavailable) || attempt == 3 || ctx.Err() != nil {
			return v, err
		}
		n.opts.Logger.Debug("query: hub went away; retrying", "attempt", attempt, "err", err)
	}
}

// Range returns up to limit events from seq from onward.
func (n *Node) Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error) {
	type page struct {
		recs [][]byte
		next uint64
	}
	p, err := query(ctx, n, func(b backend) (page, error) {
		recs, next, err := b.rangeRecords(ctx, from, limit)
		return page{recs, next}, err
	})
	if err != nil {
		return nil, 0, err
	}
	recs, next := p.recs, p.next
	out := make([]events.Event, 0, len(recs))
	for _, r := range recs {
		e, err := events.Decode(r)
		if err != nil {
			return nil, 0, err
		}
		out = append(out, e)
	}
	return out, next, nil
}

// ByRequest returns the events of one request in seq order.
func (n *Node) ByRequest(ctx context.Context, id events.ID) ([]events.Event, error) {
	return query(ctx, n, func(b backend) ([]events.Event, error) { return b.byRequest(ctx, id) })
}

// BySession returns up to limit events of one session from seq from on.
func (n *Node) BySession(ctx context.Context, id events.ID, from uint64, limit int) ([]events.Event, error) {
	return query(ctx, n, func(b backend) ([]events.Event, error) { return b.bySession(ctx, id, from, limit) })
}

// Head returns the last seq and hash.
func (n *Node) Head(ctx context.Context) (uint64, events.Hash, error) {
	type head struct {
		seq  uint64
		hash events.Hash
	}
	h, err := query(ctx, n, func(b backend) (head, error) {
		seq, hash, err := b.head(ctx)
		return head{seq, hash}, err
	})
	return h.seq, h.hash, err
}

// Verify checks the whole log (see store.Verify).
func (n *Node) Verify(ctx context.Context, cps ...store.Checkpoint) (store.Report, error) {
	return query(ctx, n, func(b backend) (store.Report, error) { return b.verify(ctx, cps) })
}

// Checkpoint returns a checkpoint of the current head signed with the data
// dir's key.
func (n *Node) Checkpoint(ctx context.Context) (store.Checkpoint, error) {
	return query(ctx, n, func(b backend) (store.Checkpoint, error) { return b.checkpoint(ctx) })
}

// View answers a query from one of the hub's projections (see
// projections.Query): rows as JSON, newest first.
func (n *Node) View(ctx context.Context, q projections.Query) ([]json.RawMessage, error) {
	return query(ctx, n, func(b backend) ([]json.RawMessage, error) { return b.view(ctx, q) })
}

// Rebuild recomputes the named projections (all when none) from seq 1 on
// the hub, telling progress how far it got.
func (n *Node) Rebuild(ctx context.Context, names []string, progress projections.Progress) (uint64, error) {
	b, err := n.link(ctx)
	if err != nil {
		return 0, err
	}
	return b.rebuild(ctx, names, progress)
}

// Close releases the link; a hub closes cleanly (final checkpoint, hub.json
// removed, lock released) so another process can take over.
func (n *Node) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return nil
	}
	n.closed = true
	if n.cur == nil {
		return nil
	}
	return n.cur.close()
}
