package hub

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub/clustertest"
)

// countKind counts the events of kind (and code) a node's store holds.
func countKind(n *Node, kind string, code events.Code) (count int, last events.Event) {
	n.cur.(*local).st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
		if e, err := events.Decode(rec); err == nil && e.Kind == kind && e.Code == code {
			count++
			last = e
		}
		return true, nil
	})
	return count, last
}

// F-C3: 500 malformed messages from one member become one refusal on
// record and one count of the rest, not 500 events. The twin: a well-formed
// event of the same member is stored.
func TestClusterRefusalsAreAggregated(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Config: accounts})
	collector := func(name string) *Node {
		n, err := Open(context.Background(), Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Name: name,
			Cluster: &Cluster{URL: as(c, "alice", "pa"), User: "alice", Machine: "m-" + name}})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	alice, other := collector("alice"), collector("other")
	defer other.Close()
	nc, err := nats.Connect(as(c, "bob", "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	for i := range 500 {
		if _, err := js.Publish(context.Background(), "tb.log.bob.m-bob", []byte(fmt.Sprintf("not an event %d", i))); err != nil {
			t.Fatal(err)
		}
	}
	good := events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted, Boundary: events.BoundaryTool,
		RequestID: events.NewID(), Outcome: events.OK, Attrs: events.A(events.AttrOriginUser, "bob", events.AttrOriginMachine, "m-bob")}
	if _, err := js.Publish(context.Background(), "tb.log.bob.m-bob", events.Encode(&good)); err != nil {
		t.Fatal(err)
	}
	last, _ := streamState(t, as(c, "alice", "pa"))
	collected(t, alice, last)
	collected(t, other, last)
	if missing, _ := alice.cur.(*local).st.Missing([]events.ID{good.ID}); len(missing) > 0 {
		t.Fatal("the member's well-formed event was not stored")
	}
	alice.Close() // flushes its count of the rest, through the stream
	// The other collector holds each collector's first refusal and alice's
	// count: a handful of events for 500 messages.
	var n int
	var summary events.Event
	eventually(t, "alice's count reaches the other collector", func() bool {
		n = 0
		other.cur.(*local).st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
			if e, err := events.Decode(rec); err == nil && e.Kind == events.KindStreamRefused && e.Code == events.CodeMalformedAppend {
				n++
				if e.Attrs.Get("count") != "" && e.Attrs.Get(events.AttrOriginMachine) == "m-alice" {
					summary = e
				}
			}
			return true, nil
		})
		return summary.Attrs.Get("count") != ""
	})
	if n > 3 || summary.Attrs.Get("count") != "499" {
		t.Fatalf("%d refusal events on record (alice counts %q), want 2 firsts and alice's count of 499", n, summary.Attrs.Get("count"))
	}
}

// F-C4: the stream refuses a purge and a message deletion from any
// member (deny_purge, deny_delete); a stream that let one happen before
// shows it: a new collector records log.stream.gap and verify is not
// healthy, naming the loss. (The twin, collectors of a stream that lost
// nothing verifying healthy, is TestClusterCollectorsAgreeThroughALeaderKill.)
func TestClusterStreamLossIsRefusedOrNamed(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Config: accounts})
	ctx := context.Background()
	nc, err := nats.Connect(as(c, "bob", "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	// A stream made by hand, without the protections, as before them (a
	// cluster that just started has no JetStream leader for a moment).
	eventually(t, "the stream is created", func() bool {
		try, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := js.CreateStream(try, jetstream.StreamConfig{Name: DefaultStream, Subjects: []string{streamSubjects}, Storage: jetstream.FileStorage, Replicas: 3, Duplicates: 2 * time.Minute})
		return err == nil
	})
	publish := func(n int) {
		for range n {
			e := events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted, Boundary: events.BoundaryTool,
				RequestID: events.NewID(), Outcome: events.OK, Attrs: events.A(events.AttrOriginUser, "bob", events.AttrOriginMachine, "m-bob")}
			if _, err := js.Publish(ctx, "tb.log.bob.m-bob", events.Encode(&e)); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish(10)
	s, _ := js.Stream(ctx, DefaultStream)
	if err := s.Purge(ctx); err != nil {
		t.Fatalf("the unprotected stream refused a purge: %v", err)
	}
	publish(3)

	// A new collector: the stream's first message is seq 11.
	d, err := Open(ctx, Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Name: "alice",
		Cluster: &Cluster{URL: as(c, "alice", "pa"), User: "alice", Machine: "m-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	last, _ := streamState(t, as(c, "alice", "pa"))
	collected(t, d, last)
	eventually(t, "the gap is on record", func() bool { n, _ := countKind(d, events.KindStreamGap, events.CodeStreamGap); return n >= 1 })
	_, gap := countKind(d, events.KindStreamGap, events.CodeStreamGap)
	if gap.Attrs.Get("from") != "1" || gap.Attrs.Get("to") != "10" {
		t.Fatalf("the gap event: %v", gap.Attrs)
	}
	rep, err := d.Verify(ctx)
	if err != nil || rep.Healthy() || rep.Lost == nil || rep.Lost.Count != 10 || !strings.Contains(rep.String(), string(events.CodeStreamGap)) {
		t.Fatalf("verify after the purge: %s %v", rep, err)
	}

	// The collector gave the stream its protections: now no member purges
	// it or deletes a message.
	if err := s.Purge(ctx); err == nil {
		t.Fatal("a member purged the protected stream")
	}
	if err := s.DeleteMsg(ctx, last); err == nil {
		t.Fatal("a member deleted a message of the protected stream")
	}
	if info, _ := s.Info(ctx); info == nil || !info.Config.DenyPurge || !info.Config.DenyDelete {
		t.Fatalf("the stream's protections: %+v", info)
	}
}

// leastPrivilege is the members' permissions docs/cluster.md gives: their
// own prefix, the JetStream API but for purging, deleting messages,
// updating or deleting the stream.
const leastPrivilege = `accounts {
  TB: {
    jetstream: enabled
    users: [
      {user: alice, password: pa, permissions: {publish: {allow: ["tb.log.alice.>", "$JS.API.>", "_INBOX.>"], deny: ["$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>", "$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.UPDATE.>"]}, subscribe: {allow: [">"]}}}
      {user: bob, password: pb, permissions: {publish: {allow: ["tb.log.bob.>", "$JS.API.>", "_INBOX.>"], deny: ["$JS.API.STREAM.PURGE.>", "$JS.API.STREAM.MSG.DELETE.>", "$JS.API.STREAM.DELETE.>", "$JS.API.STREAM.UPDATE.>"]}, subscribe: {allow: [">"]}}}
    ]
  }
}`

// F-C4 with the documented permissions: members append and collect as
// ever (the twin), and bob can neither purge the stream nor delete one of
// alice's messages; alice's events stay on every collector.
func TestClusterLeastPrivilegeMembersCannotRemoveEvidence(t *testing.T) {
	c := clustertest.Start(t, clustertest.Options{Nodes: 3, Config: leastPrivilege})
	ctx := context.Background()
	alice, err := Open(ctx, Options{Dir: DataDir(t.TempDir() + "/data"), Logger: quiet, Name: "alice",
		Cluster: &Cluster{URL: as(c, "alice", "pa"), User: "alice", Machine: "m-alice"}})
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	e := events.Event{ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted, Boundary: events.BoundaryTool, RequestID: events.NewID(), Outcome: events.OK}
	if _, err := alice.Append(ctx, []events.Event{e}); err != nil {
		t.Fatalf("alice appends with the least-privilege permissions: %v", err)
	}
	nc, err := nats.Connect(as(c, "bob", "pb"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	s, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx); err == nil {
		t.Fatal("bob purged the stream")
	}
	last, _ := streamState(t, as(c, "alice", "pa"))
	if err := s.DeleteMsg(ctx, last); err == nil {
		t.Fatal("bob deleted a message")
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs == 0 || !info.Config.DenyPurge || !info.Config.DenyDelete {
		t.Fatalf("the stream after bob's attempts: %+v %v", info, err)
	}
	collected(t, alice, last)
	if rep, err := alice.Verify(ctx); err != nil || !rep.Healthy() {
		t.Fatalf("alice's collector: %s %v", rep, err)
	}
}
