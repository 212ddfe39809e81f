package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
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

// commit makes batch durable: one journal frame, one fdatasync. The
// appenders are answered after it returns; the applier writes the frame
// into bbolt behind.
func (s *Store) commit(batch []*appendReq) {
	if rej := s.Refusal(); rej != nil {
		for _, r := range batch {
			r.err = rej
		}
		return
	}
	if s.isFull() || s.applyStuck() {
		// Paused for want of space, or the applier failed: go on only
		// once its frames fit again (trying here, so the first append
		// after space is freed finds out at once). The journal takes no
		// more than a frame or two the applier cannot place.
		if err := s.drain(); err != nil {
			s.refuseFull(batch, err)
			return
		}
	}
	f, err := s.prepare(batch)
	if pe := (*positionError)(nil); errors.As(err, &pe) {
		for _, r := range batch {
			r.seqs, r.err = nil, &events.Err{Code: events.CodeInvalidEvent, Msg: pe.Error()}
		}
		return
	}
	if err == nil && f != nil {
		s.keepUp()
		s.makeRoom()
		if unsafeNoDurability {
			lieBeforeCommit(batch)
		}
		err = s.j.write(f)
	}
	if err != nil && errors.Is(err, syscall.ENOSPC) && writeFailed(err) {
		// Out of space on a write: the frame is not on record (the next
		// one overwrites it) and the log is as it was. Answer the batch
		// unavailable (never acknowledged) and let the next one try again.
		// (ENOSPC from a sync is a failed sync, below.)
		s.refuseFull(batch, err)
		return
	}
	if err != nil {
		// The disk state after a failed write or sync is unknown, and
		// after a failed fsync Linux marks the pages clean though the disk
		// never got them, so a later fsync would succeed without them
		// ("fsyncgate"). Never retry-then-ack: refuse everything until a
		// restart reads back what the disk holds.
		rej := &events.Err{Code: events.CodeLogUnavailable, Msg: "commit failed, store stopped: " + err.Error() +
			"; nothing of it was acknowledged. Fix the disk, then restart tracebridge (reboot first, or drop the page cache: after a failed fsync it may hold what the disk lost)"}
		s.Refuse(rej)
		s.opts.Logger.Error("store commit failed; refusing all further appends", "path", s.path, "err", err)
		for _, r := range batch {
			r.seqs, r.err = nil, rej
		}
		return
	}
	if f != nil {
		s.w.took(f)
		s.enqueue(f)
		s.mu.Lock()
		s.head, s.hash = f.last()
		s.mu.Unlock()
	}
	stuck := s.applyStuck()
	s.mu.Lock()
	if s.full != nil && !stuck {
		s.opts.Logger.Info("store: space is back; appends resumed", "path", s.path, "failedCommits", s.full.tries)
		s.full = nil
	}
	s.mu.Unlock()
}

// makeRoom starts the journal again at offset 0 once it is past
// journalRewind: when bbolt holds all of it, after waiting for the applier
// if need be (once per journalRewind bytes; the applier is behind by a
// batch or two). A journal that cannot be rewound (the applier failed)
// grows.
func (s *Store) makeRoom() {
	if s.j.off < journalRewind {
		return
	}
	s.settle()
	if !s.pending() {
		s.j.rewind()
	}
}

func (s *Store) isFull() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.full != nil
}

// markFull pauses appends for want of space.
func (s *Store) markFull(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.full == nil {
		s.full = &diskFull{since: time.Now()}
		s.opts.Logger.Error("store commit failed: disk full; appends are refused until space is freed", "path", s.path, "err", err)
	}
	s.full.tries++
	s.full.err = err
}

// refuseFull answers batch unavailable for want of space.
func (s *Store) refuseFull(batch []*appendReq, err error) {
	s.markFull(err)
	rej := &events.Err{Code: events.CodeLogUnavailable, Msg: "the disk is full: " + err.Error() + "; free space and the log resumes"}
	for _, r := range batch {
		r.seqs, r.err = nil, rej
	}
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

// prepare gives batch's new events their seqs and chain hashes, in one
// read transaction of bbolt and the writer's record of what it has not
// applied yet, and returns the frame that holds them (nil: nothing new).
// It changes nothing the writer keeps: that waits for the frame to be
// written (took).
func (s *Store) prepare(batch []*appendReq) (*frame, error) {
	tx, err := s.db.Begin(false)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	var f *frame
	err = s.guard(func() (err error) {
		f, err = s.w.prepare(tx, batch)
		return err
	})
	return f, err
}

// writerState is what the writer goroutine alone keeps: the frames
// written and not applied, by event id and by request, and the stream
// position.
type writerState struct {
	head    uint64
	hash    events.Hash
	src     Source
	ids     map[events.ID]uint64 // unapplied events' seqs
	reqs    map[events.ID]int    // unapplied events per request
	unseen  []recKeysAt          // unapplied events in seq order
	scratch map[events.ID]uint64 // this batch's new ids
}

type recKeysAt struct {
	seq uint64
	k   recKeys
}

func (w *writerState) prepare(tx *bolt.Tx, batch []*appendReq) (*frame, error) {
	w.forgetApplied(tx)
	if err := w.checkSource(batch); err != nil {
		return nil, err
	}
	ids := tx.Bucket(bucketIDs)
	byReq := tx.Bucket(bucketByRequest)
	pays := tx.Bucket(bucketPayloads)
	head, hash := w.head, w.hash
	f := &frame{first: head + 1, prev: hash}
	clear(w.scratch)
	batchReqs := map[events.ID]int(nil)
	for _, r := range batch {
		for _, p := range r.payloads {
			sum := events.Hash(sha256.Sum256([]byte(p)))
			if pays == nil || pays.Get(sum[:]) == nil {
				f.payloads = append(f.payloads, p)
				f.sums = append(f.sums, sum)
			}
		}
		r.seqs = make([]uint64, len(r.evs))
		r.recs = make([][]byte, len(r.evs))
		for i := range r.evs {
			e := &r.evs[i]
			seq, scanned := storedSeq(byReq, ids, e)
			if seq == 0 {
				seq = w.ids[e.ID]
			}
			if seq == 0 {
				seq = w.scratch[e.ID]
			}
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
			r.seqs[i] = head
			var flags byte
			if e.RequestID.IsZero() {
				flags = flagIDs
			} else {
				// Past what storedSeq scans of its request, the id tree
				// finds it: count what is not applied yet too.
				if batchReqs == nil {
					batchReqs = map[events.ID]int{}
				}
				if scanned+w.reqs[e.RequestID]+batchReqs[e.RequestID] >= dedupScan {
					flags = flagIDs
				}
				batchReqs[e.RequestID]++
			}
			if w.scratch == nil {
				w.scratch = map[events.ID]uint64{}
			}
			w.scratch[e.ID] = head
			f.recs = append(f.recs, rec)
			f.flags = append(f.flags, flags)
			f.keys = append(f.keys, keysOf(e))
		}
		if r.src != nil {
			f.src = r.src
		}
	}
	if len(f.recs) == 0 && len(f.payloads) == 0 && f.src == nil {
		return nil, nil
	}
	return f, nil
}

// took records that f is written: its events are the writer's until the
// applier has them in bbolt.
func (w *writerState) took(f *frame) {
	for i, k := range f.keys {
		seq := f.first + uint64(i)
		w.ids[k.id] = seq
		if !k.req.IsZero() {
			w.reqs[k.req]++
		}
		w.unseen = append(w.unseen, recKeysAt{seq, k})
	}
	w.head, w.hash = f.last()
	if f.src != nil {
		w.src = *f.src
	}
}

// forgetApplied drops what tx's bbolt holds from the unapplied record.
func (w *writerState) forgetApplied(tx *bolt.Tx) {
	if len(w.unseen) == 0 {
		return
	}
	applied := uint64(0)
	if v := tx.Bucket(bucketMeta).Get(keyHead); len(v) == 8+32 {
		applied = binary.BigEndian.Uint64(v)
	}
	n := 0
	for _, u := range w.unseen {
		if u.seq > applied {
			break
		}
		delete(w.ids, u.k.id)
		if !u.k.req.IsZero() {
			if w.reqs[u.k.req]--; w.reqs[u.k.req] <= 0 {
				delete(w.reqs, u.k.req)
			}
		}
		n++
	}
	w.unseen = append(w.unseen[:0], w.unseen[n:]...)
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
