package store

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// Scan calls fn with each stored record from seq from onward, in order, until
// fn returns false or an error. rec is valid only during the call.
func (s *Store) Scan(from uint64, fn func(seq uint64, rec []byte) (bool, error)) error {
	return s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(seqKey(from)); k != nil; k, v = c.Next() {
			more, err := fn(binary.BigEndian.Uint64(k), v)
			if err != nil || !more {
				return err
			}
		}
		return nil
	})
}

// Range returns up to limit decoded events from seq from onward.
func (s *Store) Range(from uint64, limit int) ([]events.Event, error) {
	var out []events.Event
	err := s.Scan(from, func(seq uint64, rec []byte) (bool, error) {
		e, err := events.Decode(rec)
		if err != nil {
			return false, fmt.Errorf("seq %d: %w", seq, err)
		}
		out = append(out, e)
		return len(out) < limit, nil
	})
	return out, err
}

// RangeRecords returns copies of up to limit records from seq from onward,
// stopping before maxBytes in total, and the seq to ask for next.
func (s *Store) RangeRecords(from uint64, limit, maxBytes int) (recs [][]byte, next uint64, err error) {
	next = from
	size := 0
	err = s.Scan(from, func(seq uint64, rec []byte) (bool, error) {
		if len(recs) > 0 && size+len(rec) > maxBytes {
			return false, nil
		}
		recs = append(recs, bytes.Clone(rec))
		size += len(rec) + 4
		next = seq + 1
		return len(recs) < limit, nil
	})
	return recs, next, err
}

// Get returns the event at seq, or false if there is none.
func (s *Store) Get(seq uint64) (events.Event, bool, error) {
	var e events.Event
	var found bool
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketEvents)
		if b == nil {
			return nil
		}
		v := b.Get(seqKey(seq))
		if v == nil {
			return nil
		}
		var err error
		e, err = events.Decode(v)
		found = err == nil
		return err
	})
	return e, found, err
}

// Size is the bytes of the store file in use: its pages up to the highest
// one a transaction has written (free pages inside included; the file
// itself is grown ahead in larger steps).
func (s *Store) Size() (int64, error) {
	var n int64
	err := s.view(func(tx *bolt.Tx) error {
		n = tx.Size()
		return nil
	})
	return n, err
}

// Missing returns those of ids the store does not hold, in their order.
// It reads the whole log once.
func (s *Store) Missing(ids []events.ID) ([]events.ID, error) {
	want := make(map[events.ID]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	err := s.Scan(1, func(seq uint64, rec []byte) (bool, error) {
		id, ok := events.RecordID(rec)
		if !ok {
			return false, fmt.Errorf("seq %d: %w: no id", seq, events.ErrMalformed)
		}
		delete(want, id)
		return len(want) > 0, nil
	})
	var missing []events.ID
	for _, id := range ids {
		if want[id] {
			missing = append(missing, id)
		}
	}
	return missing, err
}

// ByRequest returns the events of one request, in seq order.
func (s *Store) ByRequest(id events.ID) ([]events.Event, error) {
	return s.byIndex(bucketByRequest, id, 0, 0)
}

// BySession returns up to limit events (0: all) of one session from seq from
// onward, in seq order.
func (s *Store) BySession(id events.ID, from uint64, limit int) ([]events.Event, error) {
	return s.byIndex(bucketBySession, id, from, limit)
}

// RecordsByRequest returns copies of the records of one request.
func (s *Store) RecordsByRequest(id events.ID) ([][]byte, error) {
	var out [][]byte
	err := s.eachIndexed(bucketByRequest, id, 0, func(seq uint64, rec []byte) (bool, error) {
		out = append(out, bytes.Clone(rec))
		return true, nil
	})
	return out, err
}

// byIndex copies the indexed records into one string of exactly their total
// size during the read transaction, then decodes them all from it: one text
// allocation for the whole result instead of one per event.
func (s *Store) byIndex(bucket []byte, id events.ID, from uint64, limit int) ([]events.Event, error) {
	var text string
	var ends []int
	var seqs []uint64
	err := s.view(func(tx *bolt.Tx) error {
		var recs [][]byte
		total := 0
		err := walkIndex(tx, bucket, id, from, func(seq uint64, rec []byte) (bool, error) {
			recs = append(recs, rec)
			seqs = append(seqs, seq)
			total += len(rec)
			return limit <= 0 || len(recs) < limit, nil
		})
		if err != nil || len(recs) == 0 {
			return err
		}
		var b strings.Builder
		b.Grow(total)
		ends = make([]int, len(recs))
		for i, r := range recs {
			b.Write(r)
			ends[i] = b.Len()
		}
		text = b.String()
		return nil
	})
	if err != nil || len(ends) == 0 {
		return nil, err
	}
	out := make([]events.Event, len(ends))
	start := 0
	for i, end := range ends {
		if err := events.DecodeString(&out[i], text[start:end]); err != nil {
			return nil, fmt.Errorf("seq %d: %w", seqs[i], err)
		}
		start = end
	}
	return out, nil
}

// eachIndexed walks an index in its own read transaction.
func (s *Store) eachIndexed(bucket []byte, id events.ID, from uint64, fn func(uint64, []byte) (bool, error)) error {
	return s.view(func(tx *bolt.Tx) error { return walkIndex(tx, bucket, id, from, fn) })
}

// walkIndex walks an index bucket (id + seq → the record, or nil: then the
// seq is looked up in the log) from seq from. rec is valid only inside tx.
func walkIndex(tx *bolt.Tx, bucket []byte, id events.ID, from uint64, fn func(uint64, []byte) (bool, error)) error {
	idx, evb := tx.Bucket(bucket), tx.Bucket(bucketEvents)
	if idx == nil || evb == nil {
		return nil
	}
	c := idx.Cursor()
	for k, v := c.Seek(indexKey(id, from)); k != nil && bytes.HasPrefix(k, id[:]); k, v = c.Next() {
		seq := binary.BigEndian.Uint64(k[16:])
		rec := v // a covering entry; older ones (and the session index) point into the log
		if len(rec) == 0 {
			rec = evb.Get(k[16:])
		}
		if rec == nil {
			return fmt.Errorf("index %s names seq %d, which is not stored", bucket, seq)
		}
		if more, err := fn(seq, rec); err != nil || !more {
			return err
		}
	}
	return nil
}
