package store

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// keyAnchor is where the hot log starts after archiving: the seq and hash
// of the last archived event (seq 8 | hash 32). The first stored event's
// prev must be this hash; Verify starts from it.
var keyAnchor = []byte("anchor")

// Anchor is the last event archived away from the store (zero: none).
type Anchor struct {
	Seq  uint64      `json:"seq"`
	Hash events.Hash `json:"hash"`
}

func readAnchor(tx *bolt.Tx) Anchor {
	var a Anchor
	if meta := tx.Bucket(bucketMeta); meta != nil {
		if v := meta.Get(keyAnchor); len(v) == 40 {
			a.Seq = binary.BigEndian.Uint64(v)
			copy(a.Hash[:], v[8:])
		}
	}
	return a
}

// Anchor returns where the stored log starts.
func (s *Store) Anchor() (Anchor, error) {
	var a Anchor
	err := s.view(func(tx *bolt.Tx) error { a = readAnchor(tx); return nil })
	return a, err
}

// Drop removes every event up to seq upTo (archived elsewhere) with its
// id and index entries, and records upTo and its hash as the anchor, in
// one durable transaction: after a crash either all of them are gone and
// the anchor names upTo, or nothing changed. upTo must be stored and
// below the head (the head stays in the store).
func (s *Store) Drop(upTo uint64) (Anchor, error) {
	if s.opts.ReadOnly {
		return Anchor{}, errors.New("store opened read-only")
	}
	var a Anchor
	err := s.update(func(tx *bolt.Tx) error {
		old := readAnchor(tx)
		head, _ := s.Head()
		switch {
		case upTo <= old.Seq:
			return fmt.Errorf("seq %d is archived already (the store starts after %d)", upTo, old.Seq)
		case upTo >= head:
			return fmt.Errorf("seq %d is not below the head %d: the newest event stays in the store", upTo, head)
		}
		evb, ids := tx.Bucket(bucketEvents), tx.Bucket(bucketIDs)
		byReq, bySess := tx.Bucket(bucketByRequest), tx.Bucket(bucketBySession)
		// First collect what goes, then delete key by key: deleting under a
		// cursor and seeking to the first key again walks the emptied
		// leaves each time (quadratic over a large range).
		var seqs, idKeys, reqKeys, sessKeys [][]byte
		var last events.Hash
		c := evb.Cursor()
		for k, v := c.First(); k != nil && binary.BigEndian.Uint64(k) <= upTo; k, v = c.Next() {
			seq := binary.BigEndian.Uint64(k)
			e, err := events.Decode(v)
			if err != nil {
				return fmt.Errorf("seq %d: %w", seq, err)
			}
			seqs = append(seqs, append([]byte(nil), k...))
			idKeys = append(idKeys, append([]byte(nil), e.ID[:]...))
			if !e.RequestID.IsZero() {
				reqKeys = append(reqKeys, indexKey(e.RequestID, seq))
			}
			if !e.SessionID.IsZero() {
				sessKeys = append(sessKeys, indexKey(e.SessionID, seq))
			}
			last = e.Hash
		}
		for _, del := range []struct {
			b    *bolt.Bucket
			keys [][]byte
		}{{evb, seqs}, {ids, idKeys}, {byReq, reqKeys}, {bySess, sessKeys}} {
			slices.SortFunc(del.keys, bytes.Compare) // in key order: each delete lands near the last
			for _, k := range del.keys {
				if err := del.b.Delete(k); err != nil {
					return err
				}
			}
		}
		a = Anchor{Seq: upTo, Hash: last}
		return tx.Bucket(bucketMeta).Put(keyAnchor, append(seqKey(upTo), last[:]...))
	})
	return a, err
}
