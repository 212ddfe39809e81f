package hub

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub/clustertest"
	"github.com/tracebridge/tracebridge/store"
)

// clusterHub opens a hub for a fresh data dir on cluster c as user on machine.
func clusterHub(t *testing.T, c *clustertest.Cluster, user string) *Node {
	t.Helper()
	n, err := Open(context.Background(), Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Name: user,
		Cluster: &Cluster{URL: c.URL(), User: user, Machine: "m-" + user}})
	if err != nil {
		t.Fatal(err)
	}
	if !n.IsHub() {
		t.Fatal("the node did not become its data dir's hub")
	}
	return n
}

// streamState is the stream's last seq and its leader.
func streamState(t *testing.T, url string) (last uint64, leader string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := js.Stream(try, DefaultStream)
		if err == nil {
			var info *jetstream.StreamInfo
			info, err = s.Info(try)
			if err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				cancel()
				return info.State.LastSeq, info.Cluster.Leader
			}
		}
		cancel()
		if ctx.Err() != nil {
			t.Fatalf("no stream leader: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// collected waits until n's store holds the stream up to seq.
func collected(t *testing.T, n *Node, seq uint64) store.Source {
	t.Helper()
	st := n.cur.(*local).st
	deadline := time.Now().Add(30 * time.Second)
	for {
		src, err := st.Source()
		if err != nil {
			t.Fatal(err)
		}
		if src.Seq >= seq {
			return src
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector at stream seq %d, want %d", src.Seq, seq)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Two machines' hubs on one three-node cluster: each publishes its own
// events, each collector materializes everyone's, the stream leader is
// killed mid-load and comes back, and the collectors end with the same
// head, every acknowledged event once, and a chain that verifies; each
// append travels as one stream message.
func TestClusterCollectorsAgreeThroughALeaderKill(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	a, b := clusterHub(t, c, "alice"), clusterHub(t, c, "bob")
	defer a.Close()
	defer b.Close()
	_, leader := streamState(t, c.URL())

	var mu sync.Mutex
	var acked []events.ID
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w, n := range []*Node{a, b, a, b} {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				req := events.NewID()
				var evs []events.Event
				for j := range 12 {
					evs = append(evs, events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted,
						Boundary: events.BoundaryTool, RequestID: req, Outcome: events.OK,
						Attrs: events.A("w", fmt.Sprint(w), "i", fmt.Sprint(i), "j", fmt.Sprint(j))})
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				_, err := n.Append(ctx, evs)
				cancel()
				if err == nil {
					mu.Lock()
					for _, e := range evs {
						acked = append(acked, e.ID)
					}
					mu.Unlock()
				}
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	for _, node := range c.Nodes {
		if node.Name == leader {
			t.Logf("killing the stream leader %s", leader)
			c.Kill(node)
			time.Sleep(time.Second)
			c.StartNode(node)
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	mu.Lock()
	t.Logf("%d events acknowledged", len(acked))
	mu.Unlock()
	if len(acked) == 0 {
		t.Fatal("nothing was acknowledged")
	}

	// The stream is quiet once a sample of its last seq holds after both
	// collectors reached it: a publish retried after the leader's death
	// may still land after the load stops (seen on a loaded machine).
	last, _ := streamState(t, c.URL())
	for {
		for _, n := range []*Node{a, b} {
			collected(t, n, last)
		}
		now, _ := streamState(t, c.URL())
		if now == last {
			break
		}
		last = now
	}
	var heads []events.Hash
	var seqs []uint64
	for _, n := range []*Node{a, b} {
		st := n.cur.(*local).st
		missing, err := st.Missing(acked)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) > 0 {
			t.Fatalf("a collector lacks %d acknowledged events (first %v)", len(missing), missing[0])
		}
		rep, err := st.Verify()
		if err != nil || !rep.OK() {
			t.Fatalf("verify: %v %v", rep, err)
		}
		seq, hash := st.Head()
		seqs, heads = append(seqs, seq), append(heads, hash)
		// Exactly once: the store holds no event id twice.
		seen := map[events.ID]bool{}
		st.Scan(1, func(seq uint64, rec []byte) (bool, error) {
			id, _ := events.RecordID(rec)
			if seen[id] {
				t.Errorf("event %v stored twice (again at seq %d)", id, seq)
			}
			seen[id] = true
			return true, nil
		})
	}
	if seqs[0] != seqs[1] || heads[0] != heads[1] {
		t.Fatalf("collectors disagree: heads %d %v and %d %v", seqs[0], heads[0], seqs[1], heads[1])
	}
	t.Logf("both collectors at seq %d (stream seq %d), head %v", seqs[0], last, heads[0])
	// An append's 12 events travel in one message (one RAFT proposal), not 12.
	if last*4 > seqs[0] {
		t.Fatalf("%d stream messages for %d events: appends are not batched", last, seqs[0])
	}
}

// accounts gives alice and bob passwords and lets each publish events only
// under its own prefix (plus the JetStream API and replies).
const accounts = `accounts {
  TB: {
    jetstream: enabled
    users: [
      {user: alice, password: pa, permissions: {publish: {allow: ["tb.log.alice.>", "$JS.API.>", "_INBOX.>"]}, subscribe: {allow: [">"]}}}
      {user: bob, password: pb, permissions: {publish: {allow: ["tb.log.bob.>", "$JS.API.>", "_INBOX.>"]}, subscribe: {allow: [">"]}}}
    ]
  }
}`

// as returns c's URL with a user's password in each server's address.
func as(c *clustertest.Cluster, user, password string) string {
	var urls []string
	for _, n := range c.Nodes {
		urls = append(urls, fmt.Sprintf("nats://%s:%s@127.0.0.1:%d", user, password, n.ClientPort))
	}
	return strings.Join(urls, ",")
}

// One machine cannot put events under another's name: the cluster refuses
// a publish under another user's prefix (and the append says why), and a
// collector refuses an event whose origin is not the subject it arrived on,
// recording the attempt where every collector shows it.
func TestClusterOriginIsEnforced(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Config: accounts})
	open := func(user, password, claim string) *Node {
		n, err := Open(context.Background(), Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Name: user,
			Cluster: &Cluster{URL: as(c, user, password), User: claim, Machine: "m-" + user}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	alice, bob := open("alice", "pa", "alice"), open("bob", "pb", "bob")
	defer alice.Close()
	defer bob.Close()
	ev := func() events.Event {
		return events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted,
			Boundary: events.BoundaryTool, RequestID: events.NewID(), Outcome: events.OK}
	}
	ok := ev()
	if _, err := alice.Append(context.Background(), []events.Event{ok}); err != nil {
		t.Fatalf("alice under her own prefix: %v", err)
	}

	// Bob's credentials, alice's name.
	mallory := open("bob", "pb", "alice")
	defer mallory.Close()
	forged := ev()
	_, err := mallory.Append(context.Background(), []events.Event{forged})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodeLogUnavailable || !strings.Contains(strings.ToLower(rej.Msg), "permissions violation") {
		t.Fatalf("bob publishing as alice: %v; want LogUnavailable naming the permissions violation", err)
	}
	t.Logf("refused by the cluster: %s", rej.Msg)

	// Bob's own prefix, an event that claims alice's origin.
	nc, err := nats.Connect(as(c, "bob", "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	claim := ev()
	claim.Attrs = events.A(events.AttrOriginUser, "alice", events.AttrOriginMachine, "m-alice")
	if _, err := js.Publish(context.Background(), "tb.log.bob.m-bob", events.Encode(&claim)); err != nil {
		t.Fatal(err)
	}

	last, _ := streamState(t, as(c, "alice", "pa"))
	for name, n := range map[string]*Node{"alice": alice, "bob": bob} {
		collected(t, n, last)
		st := n.cur.(*local).st
		if missing, _ := st.Missing([]events.ID{ok.ID}); len(missing) > 0 {
			t.Fatalf("%s's collector lacks alice's event", name)
		}
		for _, id := range []events.ID{forged.ID, claim.ID} {
			if missing, _ := st.Missing([]events.ID{id}); len(missing) == 0 {
				t.Fatalf("%s's collector stored a forged event %v", name, id)
			}
		}
		// The refusal is on record: collectors record it through the
		// stream, so it reaches every collector.
		eventually(t, name+" holds the refusal", func() bool {
			found := false
			st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
				e, _ := events.Decode(rec)
				if e.Kind == events.KindStreamRefused && e.Code == events.CodeOriginMismatch && strings.Contains(e.Attrs.Get("error"), claim.ID.String()) {
					found = true
				}
				return !found, nil
			})
			return found
		})
	}
}

// A hub on a cluster keeps no payloads (its collectors could not resolve
// them): a process attached to it without asking for the cluster learns so
// from the hub, and an event referring to a payload is refused before it
// reaches the stream, where every collector would refuse it.
func TestClusterHubKeepsNoPayloads(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 1})
	h := clusterHub(t, c, "carol")
	defer h.Close()
	if h.KeepsPayloads() {
		t.Fatal("the cluster hub says it keeps payloads")
	}
	attached, err := Open(context.Background(), Options{Dir: h.opts.Dir, Logger: quiet, Name: "attached"})
	if err != nil {
		t.Fatal(err)
	}
	defer attached.Close()
	if attached.IsHub() || attached.KeepsPayloads() {
		t.Fatalf("a process attached to the cluster hub: hub=%v keeps payloads=%v", attached.IsHub(), attached.KeepsPayloads())
	}
	e := events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted, Boundary: events.BoundaryTool,
		RequestID: events.NewID(), Outcome: events.OK, Attrs: events.A("answer", events.PayloadRef(strings.Repeat("p", 5000)))}
	var rej *events.Err
	if _, err := attached.Append(context.Background(), []events.Event{e}); !errors.As(err, &rej) || rej.Code != events.CodePayloadMissing {
		t.Fatalf("an event referring to a payload on a cluster: %v", err)
	}
	if err := attached.PutPayloads(context.Background(), []string{"x"}); !errors.As(err, &rej) || rej.Code != events.CodePayloadMissing {
		t.Fatalf("a payload put to a cluster hub: %v", err)
	}
}
