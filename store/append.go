package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/tracebridge/tracebridge/events"
	bolt "go.etcd.io/bbolt"
)

var _ events.Appender = (*Store)(nil)

type appendReq struct {
	evs      []events.Event
	payloads []string // PutPayloads' payloads, stored before the batch's events
	src      *Source  // AppendFrom's stream position; nil for Append
	recs     [][]byte // the record stored for each new event; nil for duplicates
	seqs     []uint64
	err      error
	done     chan struct{}
	answered bool // only the writer goroutine touches it
}

// answer wakes the appender, once.
func (r *appendReq) answer() {
	if !r.answered {
		r.answered = true
		close(r.done)
	}
}

// Append stores evs durably, in order, and returns their seqs. It returns
// only after the transaction holding them is committed with fsync. Events
// whose id is already stored are not stored again; their stored seq is
// returned. evs is not modified. Invalid events make the whole call fail with an
// *events.Err and nothing is stored.
//
// If ctx ends while the events are queued or being committed, Append returns
// ctx's error; the events may still be stored, which a retry with the same
// ids finds out without duplicating them.
func (s *Store) Append(ctx context.Context, evs []events.Event) ([]uint64, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	return s.append(ctx, evs, nil)
}

func (s *Store) append(ctx context.Context, evs []events.Event, src *Source) ([]uint64, error) {
	if rej := s.Refusal(); rej != nil {
		return nil, rej
	}
	for i := range evs {
		if err := events.Validate(&evs[i]); err != nil {
			return nil, &events.Err{Code: events.CodeInvalidEvent, Msg: err.Error()}
		}
	}
	// Payloads are stored before the events that refer to them: a
	// reference to one not stored is a bug or a forgery, never taken.
	if sum, err := s.missingPayload(evs); err != nil {
		return nil, err
	} else if sum != "" {
		return nil, &events.Err{Code: events.CodePayloadMissing, Msg: "an event refers to payload " + sum + ", which is not stored: store payloads before the events that refer to them"}
	}
	// The writer sets Seq, Prev and Hash on its own copy: the caller's slice
	// may be read (or copied by append) while the commit runs.
	return s.send(ctx, &appendReq{evs: slices.Clone(evs), src: src, done: make(chan struct{})})
}

// send queues req for the writer and waits for its answer.
func (s *Store) send(ctx context.Context, req *appendReq) ([]uint64, error) {
	if rej := s.Refusal(); rej != nil {
		return nil, rej
	}
	s.sendMu.RLock()
	if s.closed || s.reqs == nil {
		s.sendMu.RUnlock()
		return nil, &events.Err{Code: events.CodeLogUnavailable, Msg: "store is closed or read-only"}
	}
	select {
	case s.reqs <- req:
		s.sendMu.RUnlock()
	case <-ctx.Done():
		s.sendMu.RUnlock()
		return nil, fmt.Errorf("append: %w", ctx.Err())
	}
	select {
	case <-req.done:
		return req.seqs, req.err
	case <-ctx.Done():
		return nil, fmt.Errorf("append: %w", ctx.Err())
	}
}

// writer is the only goroutine that writes. It takes every queued request up
// to MaxBatch events, commits them in one transaction, then answers them.
func (s *Store) writer() {
	defer close(s.done)
	var batch []*appendReq
	for req := range s.reqs {
		batch = append(batch[:0], req)
		n := len(req.evs) + len(req.payloads)
	drain:
		for n < s.opts.MaxBatch {
			select {
			case r, ok := <-s.reqs:
				if !ok {
					break drain
				}
				batch = append(batch, r)
				n += len(r.evs) + len(r.payloads)
			default:
				break drain
			}
		}
		s.commit(batch)
		for _, r := range batch {
			r.answer()
		}
		if s.opts.Committed != nil {
			s.notify(batch)
		}
	}
}

func (s *Store) commit(batch []*appendReq) {
	if rej := s.Refusal(); rej != nil {
		for _, r := range batch {
			r.err = rej
		}
		return
	}
	head, hash := s.Head()
	tx, err := s.db.Begin(true)
	if err == nil {
		err = s.guard(func() (err error) {
			head, hash, err = s.put(tx, batch, head, hash)
			return err
		})
		if err == nil && unsafeNoDurability {
			lieBeforeCommit(batch)
		}
		if err == nil {
			err = s.guard(tx.Commit)
		} else {
			tx.Rollback()
		}
	}
	if pe := (*positionError)(nil); errors.As(err, &pe) {
		for _, r := range batch {
			r.seqs, r.err = nil, &events.Err{Code: events.CodeInvalidEvent, Msg: pe.Error()}
		}
		return
	}
	if err != nil && errors.Is(err, syscall.ENOSPC) && writeFailed(err) {
		// Out of space on a write: bbolt wrote no meta page, so the log is
		// as it was and this batch is not on record. Answer it unavailable
		// (never acknowledged) and let the next batch try again. (ENOSPC
		// from a sync is a failed sync, below.)
		s.mu.Lock()
		if s.full == nil {
			s.full = &diskFull{since: time.Now()}
			s.opts.Logger.Error("store commit failed: disk full; appends are refused until space is freed", "path", s.path, "err", err)
		}
		s.full.tries++
		s.full.err = err
		s.mu.Unlock()
		rej := &events.Err{Code: events.CodeLogUnavailable, Msg: "the disk is full: " + err.Error() + "; free space and the log resumes"}
		for _, r := range batch {
			r.seqs, r.err = nil, rej
		}
		return
	}
	if err != nil {
		// The disk state after a failed commit is unknown: bbolt may have
		// written pages but not the meta page, and after a failed fsync
		// Linux marks the pages clean though the disk never got them, so
		// a later fsync would succeed without them ("fsyncgate"). Never
		// retry-then-ack: refuse everything until a restart reads back
		// what the disk holds.
		rej := &events.Err{Code: events.CodeLogUnavailable, Msg: "commit failed, store stopped: " + err.Error() +
			"; nothing of it was acknowledged. Fix the disk, then restart tracebridge (reboot first, or drop the page cache: after a failed fsync it may hold what the disk lost)"}
		s.Refuse(rej)
		s.opts.Logger.Error("store commit failed; refusing all further appends", "path", s.path, "err", err)
		for _, r := range batch {
			r.seqs, r.err = nil, rej
		}
		return
	}
	s.mu.Lock()
	s.head, s.hash = head, hash
	if s.full != nil {
		s.opts.Logger.Info("store: space is back; appends resumed", "path", s.path, "failedCommits", s.full.tries)
		s.full = nil
	}
	s.mu.Unlock()
}

// writeFailed tells a failed write or file growth (nothing synced, the
// meta page unwritten) from a failed sync.
func writeFailed(err error) bool {
	var pe *os.PathError
	return errors.As(err, &pe) && (pe.Op == "write" || pe.Op == "truncate")
}

func decodeSeq(v []byte) uint64 {
	if len(v) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(v)
}

// notify hands the events the last commit stored to Options.Committed: the
// ones given a seq (re-sent duplicates have Seq 0).
func (s *Store) notify(batch []*appendReq) {
	var stored []events.Event
	var recs [][]byte
	for _, r := range batch {
		if r.err != nil {
			continue
		}
		for i := range r.evs {
			if r.evs[i].Seq != 0 {
				stored = append(stored, r.evs[i])
				recs = append(recs, r.recs[i])
			}
		}
	}
	if len(stored) > 0 {
		s.opts.Committed(stored, recs)
	}
}

// put stores batch after head in tx and returns the new head.
func (s *Store) put(tx *bolt.Tx, batch []*appendReq, head uint64, hash events.Hash) (uint64, events.Hash, error) {
	if err := checkSource(tx, batch); err != nil {
		return head, hash, err
	}
	if err := putPayloads(tx, batch); err != nil {
		return head, hash, err
	}
	evb := tx.Bucket(bucketEvents)
	evb.FillPercent = 0.9 // append-only keys: pack pages
	ids := tx.Bucket(bucketIDs)
	byReq := tx.Bucket(bucketByRequest)
	bySess := tx.Bucket(bucketBySession)
	// Mostly appended too (a request's and a session's keys grow with time,
	// ULIDs first): split pages 90% full, not half (BenchmarkScale's
	// bytes/event).
	byReq.FillPercent, bySess.FillPercent = 0.9, 0.9
	for _, r := range batch {
		r.seqs = make([]uint64, len(r.evs))
		r.recs = make([][]byte, len(r.evs))
		for i := range r.evs {
			e := &r.evs[i]
			seq, scanned := storedSeq(byReq, ids, e)
			if seq != 0 {
				r.seqs[i] = seq
				e.Seq = 0 // stored before: not new in this commit
				continue
			}
			head++
			e.Seq, e.Prev = head, hash
			rec := events.AppendBody(make([]byte, 0, 320), e)
			e.Hash = events.ChainHash(hash, rec)
			rec = append(append(rec, e.Prev[:]...), e.Hash[:]...)
			hash = e.Hash
			r.recs[i] = rec
			key := seqKey(head)
			if err := evb.Put(key, rec); err != nil {
				return head, hash, err
			}
			if e.RequestID.IsZero() || scanned >= dedupScan {
				// Past what storedSeq scans of its request: the id
				// tree finds it.
				if err := ids.Put(e.ID[:], key); err != nil {
					return head, hash, err
				}
			}
			if !e.RequestID.IsZero() {
				// The request index covers the record: one request's
				// events are one range of adjacent keys (Verify checks
				// each copy against the log).
				if err := byReq.Put(indexKey(e.RequestID, head), rec); err != nil {
					return head, hash, err
				}
			}
			if !e.SessionID.IsZero() {
				if err := bySess.Put(indexKey(e.SessionID, head), nil); err != nil {
					return head, hash, err
				}
			}
			r.seqs[i] = head
		}
	}
	if err := putSource(tx, batch); err != nil {
		return head, hash, err
	}
	return head, hash, tx.Bucket(bucketMeta).Put(keyHead, append(seqKey(head), hash[:]...))
}

// dedupScan is how many of a request's first records storedSeq compares
// ids with. An event stored past them (or without a request) also goes into
// the ids tree. Most requests hold fewer, so most events cost no id-tree
// insert: a commit rewrites the pages of one B-tree less.
const dedupScan = 64

// storedSeq returns the seq of e if its id is stored already, else 0, and
// how many of its request's records it compared (at most dedupScan). A
// stored event is either among the first dedupScan records of its request
// in the covering index or in the ids tree (which, in stores older than
// that rule, holds every id).
func storedSeq(byReq, ids *bolt.Bucket, e *events.Event) (seq uint64, scanned int) {
	if !e.RequestID.IsZero() {
		c := byReq.Cursor()
		for k, v := c.Seek(e.RequestID[:]); k != nil && scanned < dedupScan && bytes.HasPrefix(k, e.RequestID[:]); k, v = c.Next() {
			if id, ok := events.RecordID(v); ok && id == e.ID {
				return binary.BigEndian.Uint64(k[len(e.RequestID):]), scanned
			}
			scanned++
		}
	}
	return decodeSeq(ids.Get(e.ID[:])), scanned
}
