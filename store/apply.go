package store

import (
	"errors"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// The applier writes acknowledged frames into bbolt behind the writer: all
// that is queued in one transaction, committed as bbolt always commits
// (two fdatasyncs), so the file every reader uses is never less consistent
// than before the journal. Reads wait for the frames acknowledged before
// they began (settle), so a reader never misses an acknowledged event.

// applier is the state the writer, the applier and readers share.
type applier struct {
	queue   []*frame
	acked   uint64 // frames acknowledged
	applied uint64 // frames written into bbolt
	bytes   int    // the queued frames' records and payloads
	stuck   error  // set while the last attempt failed: readers stop waiting
	// payloads counts the queued frames' payloads by SHA-256: Append
	// takes a reference to one before it is applied.
	payloads map[events.Hash]int
	closed   bool
	wake     chan struct{} // one token: frames are queued, or closed
	hurry    chan struct{} // one token: a reader waits for the queued frames
	done     chan struct{}
}

// The applier lets frames gather for up to applyLinger (or applyAt bytes)
// before it commits, so that one bbolt commit — two fdatasyncs, the pages
// of five B-trees rewritten, and, on a virtual disk, a trap per I/O — serves
// many acknowledgements; a waiting reader cuts the wait short. applyAt is
// above what a bridge under load acknowledges in applyLinger (~600 KB): at
// 64 KiB (before issue 47) the applier committed ~65 times a second, its
// fdatasyncs and page writes beside every call's journal fdatasync.
const (
	applyLinger = 100 * time.Millisecond
	applyAt     = 1 << 20
)

// enqueue hands an acknowledged frame to the applier.
func (s *Store) enqueue(f *frame) {
	s.amu.Lock()
	s.ap.queue = append(s.ap.queue, f)
	s.ap.acked++
	s.ap.bytes += f.bytes()
	for _, sum := range f.sums {
		s.ap.payloads[sum]++
	}
	s.amu.Unlock()
	select {
	case s.ap.wake <- struct{}{}:
	default:
	}
}

// settle waits until bbolt holds every frame acknowledged before the call,
// or the applier is stuck (then reads see what bbolt holds).
func (s *Store) settle() {
	if s.ap == nil {
		return
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	for target := s.ap.acked; s.ap.applied < target && s.ap.stuck == nil && !s.ap.closed; {
		select {
		case s.ap.hurry <- struct{}{}:
		default:
		}
		s.acond.Wait()
	}
}

// applyDue reports whether the applier should commit now rather than let
// frames gather.
func (s *Store) applyDue() bool {
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.ap.closed || s.ap.stuck != nil || s.ap.bytes >= applyAt
}

// gather waits up to applyLinger for more frames, unless they are due.
func (s *Store) gather() {
	t := time.NewTimer(applyLinger)
	defer t.Stop()
	for !s.applyDue() {
		select {
		case <-t.C:
			return
		case <-s.ap.hurry:
			return
		case <-s.ap.wake:
		}
	}
}

// maxUnapplied bounds the bytes acknowledged and not applied: past it the
// writer waits for the applier. It bounds how far reads wait, what a start
// after a crash applies, and what a full disk must find room for; it is
// the journal's size, so the writer never waits for both.
const maxUnapplied = journalRewind

// keepUp waits while more than maxUnapplied bytes wait for the applier,
// unless it failed.
func (s *Store) keepUp() {
	s.amu.Lock()
	defer s.amu.Unlock()
	for s.ap.bytes > maxUnapplied && s.ap.stuck == nil && !s.ap.closed {
		s.acond.Wait()
	}
}

// pending reports whether frames are acknowledged and not applied.
func (s *Store) pending() bool {
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.ap.applied < s.ap.acked
}

// applyLoop applies queued frames until Close, retrying a failed attempt
// that left the file as it was (a full disk) every retryEvery.
func (s *Store) applyLoop() {
	defer close(s.ap.done)
	const retryEvery = 100 * time.Millisecond
	for {
		timer := (<-chan time.Time)(nil)
		if s.applyStuck() {
			timer = time.After(retryEvery)
		}
		hurried := false
		select {
		case <-s.ap.wake:
		case <-s.ap.hurry:
			hurried = true
		case <-timer:
		}
		if !hurried {
			s.gather()
		}
		s.drain()
		s.amu.Lock()
		done := s.ap.closed && (len(s.ap.queue) == 0 || s.ap.stuck != nil || s.opts.holdApply)
		s.amu.Unlock()
		if done {
			return
		}
	}
}

func (s *Store) applyStuck() bool {
	s.amu.Lock()
	defer s.amu.Unlock()
	return s.ap.stuck != nil && len(s.ap.queue) > 0
}

// outOfSpace tells a failed write (bbolt wrote no meta page: the file is as
// it was, so trying again is safe) from every other failure.
func outOfSpace(err error) bool { return errors.Is(err, syscall.ENOSPC) && writeFailed(err) }

// drain applies every queued frame in one transaction. The applier calls
// it; so does the writer, to learn whether a full disk has space again.
// It returns the error of the attempt.
func (s *Store) drain() error {
	if s.opts.holdApply {
		return nil
	}
	s.drainMu.Lock()
	defer s.drainMu.Unlock()
	s.amu.Lock()
	frames, last := s.ap.queue, s.ap.stuck
	s.amu.Unlock()
	if last != nil && !outOfSpace(last) {
		// Never again after a failed sync: bbolt may hold pages the disk
		// lost. The next start applies the journal.
		return last
	}
	if len(frames) == 0 {
		return nil
	}
	err := s.guard(func() error { return s.db.Update(func(tx *bolt.Tx) error { return applyFrames(tx, frames) }) })
	if err != nil && outOfSpace(err) {
		// bbolt wrote no meta page: the frames stay queued and the
		// writer takes no more until they fit (commit).
		s.markFull(err)
	} else if err != nil {
		// Unknown disk state (see commit): stop taking appends. The frames
		// are in the journal; the next start applies them.
		s.Refuse(&events.Err{Code: events.CodeLogUnavailable, Msg: "commit failed, store stopped: applying the journal to the log: " + err.Error() +
			"; everything acknowledged is in the journal and is applied at the next start. Fix the disk, then restart tracebridge"})
		s.opts.Logger.Error("store apply failed; refusing all further appends", "path", s.path, "err", err)
	}
	s.amu.Lock()
	defer s.amu.Unlock()
	defer s.acond.Broadcast()
	s.ap.stuck = err
	if err != nil {
		return err
	}
	s.ap.queue = s.ap.queue[len(frames):]
	s.ap.applied += uint64(len(frames))
	for _, f := range frames {
		s.ap.bytes -= f.bytes()
		for _, sum := range f.sums {
			if s.ap.payloads[sum]--; s.ap.payloads[sum] <= 0 {
				delete(s.ap.payloads, sum)
			}
		}
	}
	return nil
}

// applyFrames writes frames into bbolt, in order.
func applyFrames(tx *bolt.Tx, frames []*frame) error {
	evb := tx.Bucket(bucketEvents)
	evb.FillPercent = 0.9 // append-only keys: pack pages
	ids := tx.Bucket(bucketIDs)
	byReq := tx.Bucket(bucketByRequest)
	bySess := tx.Bucket(bucketBySession)
	meta := tx.Bucket(bucketMeta)
	// Mostly appended too (a request's and a session's keys grow with time,
	// ULIDs first): split pages 90% full, not half (BenchmarkScale's
	// bytes/event).
	byReq.FillPercent, bySess.FillPercent = 0.9, 0.9
	for _, f := range frames {
		if err := applyPayloads(tx, f); err != nil {
			return err
		}
		for i, rec := range f.recs {
			seq, k := f.first+uint64(i), f.keys[i]
			key := seqKey(seq)
			if err := evb.Put(key, rec); err != nil {
				return err
			}
			if f.flags[i]&flagIDs != 0 {
				if err := ids.Put(k.id[:], key); err != nil {
					return err
				}
			}
			if !k.req.IsZero() {
				// The request index covers the record: one request's
				// events are one range of adjacent keys (Verify checks
				// each copy against the log).
				if err := byReq.Put(indexKey(k.req, seq), rec); err != nil {
					return err
				}
			}
			if !k.sess.IsZero() {
				if err := bySess.Put(indexKey(k.sess, seq), nil); err != nil {
					return err
				}
			}
		}
		if f.src != nil {
			if err := meta.Put(keySource, sourceValue(*f.src)); err != nil {
				return err
			}
		}
		if len(f.recs) > 0 {
			seq, hash := f.last()
			if err := meta.Put(keyHead, append(seqKey(seq), hash[:]...)); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyPayloads stores the payloads bbolt does not hold yet.
func applyPayloads(tx *bolt.Tx, f *frame) error {
	if len(f.payloads) == 0 {
		return nil
	}
	b, err := tx.CreateBucketIfNotExists(bucketPayloads)
	if err != nil {
		return err
	}
	for i, p := range f.payloads {
		if b.Get(f.sums[i][:]) != nil {
			continue
		}
		if err := b.Put(f.sums[i][:], []byte(p)); err != nil {
			return err
		}
	}
	return nil
}
