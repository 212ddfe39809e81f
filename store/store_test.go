package store

import (
	"context"
	"errors"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

func TestAppendAssignsContiguousSeqsAndChain(t *testing.T) {
	s := openTest(t)
	req := testIDs.New()
	batch := []events.Event{ev(req, 1), ev(req, 2), ev(req, 3)}
	seqs, err := s.Append(context.Background(), batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 3 || seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 3 {
		t.Fatalf("seqs = %v, want [1 2 3]", seqs)
	}
	got, err := s.Range(1, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("Range returned %d events", len(got))
	}
	if !got[0].Prev.IsZero() || got[1].Prev != got[0].Hash || got[2].Prev != got[1].Hash {
		t.Fatal("prev hashes do not chain")
	}
	if got[1].Attrs.Get("i") != "2" || got[1].ID != batch[1].ID {
		t.Fatalf("event 2 came back as %+v", got[1])
	}
	if head, hash := s.Head(); head != 3 || hash != got[2].Hash {
		t.Fatalf("head = %d %s", head, hash)
	}
}

func TestAppendIsIdempotentByEventID(t *testing.T) {
	s := openTest(t)
	req := testIDs.New()
	a, b := ev(req, 1), ev(req, 2)
	if _, err := s.Append(context.Background(), []events.Event{a}); err != nil {
		t.Fatal(err)
	}
	// a again (a re-send after a lost ack), b, and b twice in one batch.
	seqs, err := s.Append(context.Background(), []events.Event{a, b, b})
	if err != nil {
		t.Fatal(err)
	}
	if seqs[0] != 1 || seqs[1] != 2 || seqs[2] != 2 {
		t.Fatalf("seqs = %v, want [1 2 2]", seqs)
	}
	if head, _ := s.Head(); head != 2 {
		t.Fatalf("head = %d, want 2: a duplicate was stored", head)
	}
}

// Dedup without an id-tree insert per event: a stored event is found among
// the first dedupScan records of its request, or in the ids tree, which
// holds only the events past those and those without a request (and every
// id in stores older than that rule).
func TestDedupCoversLongRequestsEventsWithoutOneAndOldStores(t *testing.T) {
	ctx := context.Background()
	for _, old := range []bool{false, true} {
		s := openTest(t)
		req := testIDs.New()
		var all []events.Event
		for i := range 3*dedupScan + 5 {
			all = append(all, ev(req, i))
		}
		for i := range 5 {
			e := ev(events.ID{}, i)
			e.SessionID = events.ID{}
			all = append(all, e)
		}
		// In several commits, so positions past dedupScan land in later ones.
		var seqs []uint64
		for _, part := range [][]events.Event{all[:dedupScan-1], all[dedupScan-1 : dedupScan+3], all[dedupScan+3:]} {
			got, err := s.Append(ctx, part)
			if err != nil {
				t.Fatal(err)
			}
			seqs = append(seqs, got...)
		}
		err := s.update(func(tx *bolt.Tx) error {
			ids := tx.Bucket(bucketIDs)
			if want := len(all) - dedupScan; ids.Stats().KeyN != want {
				t.Errorf("ids tree holds %d ids, want %d (past the first %d of the request, and those without one)", ids.Stats().KeyN, want, dedupScan)
			}
			if !old {
				return nil
			}
			// The layout before ADR 0011 and this rule: no copies in
			// by_request, every id in the ids tree.
			if err := tx.DeleteBucket(bucketByRequest); err != nil {
				return err
			}
			if _, err := tx.CreateBucket(bucketByRequest); err != nil {
				return err
			}
			for i, e := range all {
				if err := ids.Put(e.ID[:], seqKey(seqs[i])); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		// Every one of them again, shuffled, some twice in one batch.
		again := slices.Clone(all)
		rand.Shuffle(len(again), func(i, j int) { again[i], again[j] = again[j], again[i] })
		again = append(again, again[:7]...)
		got, err := s.Append(ctx, again)
		if err != nil {
			t.Fatal(err)
		}
		want := map[events.ID]uint64{}
		for i, e := range all {
			want[e.ID] = seqs[i]
		}
		for i, e := range again {
			if got[i] != want[e.ID] {
				t.Fatalf("old layout %v: re-sent event %d (%v) got seq %d, stored at %d", old, i, e.ID, got[i], want[e.ID])
			}
		}
		if head, _ := s.Head(); head != uint64(len(all)) {
			t.Fatalf("old layout %v: head = %d after re-sending, want %d: a duplicate was stored", old, head, len(all))
		}
	}
}

func TestConcurrentAppendsShareTransactions(t *testing.T) {
	s := openTest(t)
	const writers, per = 64, 20
	var wg sync.WaitGroup
	seen := make(chan uint64, writers*per)
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			req := testIDs.New()
			for i := 0; i < per; i++ {
				seqs, err := s.Append(context.Background(), []events.Event{ev(req, i)})
				if err != nil {
					t.Error(err)
					return
				}
				seen <- seqs[0]
			}
		})
	}
	wg.Wait()
	close(seen)
	got := map[uint64]bool{}
	for seq := range seen {
		if got[seq] {
			t.Fatalf("seq %d handed out twice", seq)
		}
		got[seq] = true
	}
	for seq := uint64(1); seq <= writers*per; seq++ {
		if !got[seq] {
			t.Fatalf("seq %d never handed out", seq)
		}
	}
}

func TestReadsByRequestAndSession(t *testing.T) {
	s := openTest(t)
	r1, r2 := testIDs.New(), testIDs.New()
	var batch []events.Event
	for i := 0; i < 10; i++ {
		req := r1
		if i%2 == 1 {
			req = r2
		}
		batch = append(batch, ev(req, i))
	}
	if _, err := s.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	got, err := s.ByRequest(r2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("ByRequest: %d events, want 5", len(got))
	}
	for i, e := range got {
		if e.RequestID != r2 || e.Attrs.Get("i") != []string{"1", "3", "5", "7", "9"}[i] {
			t.Fatalf("ByRequest[%d] = %+v", i, e)
		}
	}
	sess, err := s.BySession(r1, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(sess) != 2 || sess[0].Seq != 5 || sess[1].Seq != 7 {
		t.Fatalf("BySession from 4 limit 2: %+v", sess)
	}
	if none, _ := s.ByRequest(testIDs.New()); len(none) != 0 {
		t.Fatalf("unknown request returned %d events", len(none))
	}
	if missing, err := s.Missing([]events.ID{batch[3].ID, r1, batch[9].ID}); err != nil || len(missing) != 1 || missing[0] != r1 {
		t.Fatalf("Missing = %v, %v; want only %v (a request id, not an event's)", missing, err, r1)
	}
}

func TestInvalidEventsAreRejectedWhole(t *testing.T) {
	s := openTest(t)
	req := testIDs.New()
	bad := ev(req, 2)
	bad.Kind = "no.such.kind"
	_, err := s.Append(context.Background(), []events.Event{ev(req, 1), bad})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodeInvalidEvent {
		t.Fatalf("err = %v, want InvalidEvent", err)
	}
	if head, _ := s.Head(); head != 0 {
		t.Fatalf("head = %d: part of a rejected batch was stored", head)
	}
}

func TestReopenKeepsHeadAndSecondOpenerTimesOut(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := testIDs.New()
	if _, err := s.Append(context.Background(), []events.Event{ev(req, 1), ev(req, 2)}); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("second open: %v, want ErrLocked", err)
	}
	if _, err := Open(path, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Fatalf("read-only open beside a writer: %v, want ErrLocked", err)
	}
	head, hash := s.Head()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if h2, hash2 := s2.Head(); h2 != head || hash2 != hash {
		t.Fatalf("reopened head %d, want %d", h2, head)
	}
	if seqs, err := s2.Append(context.Background(), []events.Event{ev(req, 3)}); err != nil || seqs[0] != 3 {
		t.Fatalf("append after reopen: %v %v", seqs, err)
	}
	if rep, _ := s2.Verify(); !rep.OK() {
		t.Fatal(rep)
	}
}

func TestClosedStoreRefusesAppends(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "events.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = s.Append(context.Background(), []events.Event{ev(testIDs.New(), 1)})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodeLogUnavailable {
		t.Fatalf("append after close: %v", err)
	}
}
