package store

import (
	"context"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// Dropping archived events leaves a log that starts after its anchor:
// it verifies, reads from the anchor on, takes appends, survives a reopen,
// and an anchor edited by hand is caught.
func TestDropKeepsTheChainVerifiable(t *testing.T) {
	s := openTest(t)
	reqs := []events.ID{testIDs.New(), testIDs.New()}
	var evs []events.Event
	for i := range 100 {
		evs = append(evs, ev(reqs[i/50], i))
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Drop(100); err == nil {
		t.Fatal("dropped the head")
	}
	a, err := s.Drop(50)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Drop(40); err == nil {
		t.Fatal("dropped below the anchor again")
	}
	rep, err := s.Verify()
	if err != nil || !rep.OK() || rep.Events != 50 || rep.Anchor != 50 {
		t.Fatalf("after drop: %+v %v", rep, err)
	}
	got, _ := s.Range(1, 10)
	if len(got) == 0 || got[0].Seq != 51 || got[0].Prev != a.Hash {
		t.Fatalf("the log does not start after the anchor: %+v", got)
	}
	if old, _ := s.ByRequest(reqs[0]); len(old) != 0 {
		t.Fatalf("%d events of an archived request are still indexed", len(old))
	}
	if cur, _ := s.ByRequest(reqs[1]); len(cur) != 50 {
		t.Fatalf("%d events of the kept request", len(cur))
	}
	if _, err := s.Append(context.Background(), []events.Event{ev(reqs[1], 100)}); err != nil {
		t.Fatal(err)
	}
	// An anchor edited by hand: the first stored event no longer follows it.
	s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyAnchor, append(seqKey(50), make([]byte, 32)...))
	})
	if rep, _ := s.Verify(); rep.OK() || rep.FirstBad != 51 {
		t.Fatalf("an edited anchor verified: %+v", rep)
	}
	s.update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketMeta).Put(keyAnchor, append(seqKey(50), a.Hash[:]...))
	})
}
