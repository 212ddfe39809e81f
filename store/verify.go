package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// Report is the result of Verify.
type Report struct {
	Events   uint64      `json:"events"`   // records read
	Head     uint64      `json:"head"`     // seq recorded as the head in meta
	HeadHash events.Hash `json:"headHash"` // hash recorded with it
	// FirstBad is the first seq that fails (0 when intact). For a tail
	// missing behind the recorded head or a checkpoint, it is the first
	// missing seq.
	FirstBad uint64 `json:"firstBad,omitempty"`
	Problem  string `json:"problem,omitempty"`
	// Checkpoints is how many checkpoints were checked against the log.
	Checkpoints int `json:"checkpoints"`
	// Anchor is the last archived seq (0: nothing archived): the stored
	// log starts after it.
	Anchor uint64 `json:"anchor,omitempty"`
	// Appends says why the store refuses appends now ("" when it takes
	// them): an intact log that cannot grow is not a healthy one.
	Appends string `json:"appends,omitempty"`
	// Source is the stream position of a collector's store (ADR 0012);
	// nil for a store that is the log itself.
	Source *Source `json:"source,omitempty"`
	// Lost is what the stream lost before this collector stored it (nil:
	// nothing): the chain holds what it got, and evidence is missing.
	Lost *Lost `json:"lost,omitempty"`
}

// OK reports whether the log verified.
func (r Report) OK() bool { return r.Problem == "" }

func (r Report) String() string {
	if r.OK() {
		s := fmt.Sprintf("ok: %d events, head seq %d (hash %s…)", r.Events, r.Head, r.HeadHash.String()[:12])
		if r.Anchor > 0 {
			s += fmt.Sprintf(", starting after seq %d (archived)", r.Anchor)
		}
		if r.Checkpoints > 0 {
			s += fmt.Sprintf(", %d signed checkpoint(s) match", r.Checkpoints)
		}
		if r.Source != nil {
			s += fmt.Sprintf("; collected stream %s up to its seq %d", r.Source.Stream, r.Source.Seq)
		}
		if r.Lost != nil {
			s += "\nbut " + r.Lost.String() + ": their events are missing (" + string(events.CodeStreamGap) + ")"
		}
		if r.Appends != "" {
			s += "\nbut appends are refused: " + r.Appends
		}
		return s
	}
	return fmt.Sprintf("broken at seq %d: %s", r.FirstBad, r.Problem)
}

// Healthy reports whether the log verified, takes appends and (a
// collector's) lost nothing of its stream.
func (r Report) Healthy() bool { return r.OK() && r.Appends == "" && r.Lost == nil }

// Verify reads the whole log in one read transaction and checks that seqs
// run 1, 2, 3… without gaps, that each record's own seq matches its key,
// that each record's prev is the hash of the one before, that each hash
// matches its bytes, that the meta head names the last record, and that
// every given checkpoint's seq is stored with the checkpoint's hash.
// It reports the first problem found.
func (s *Store) Verify(cps ...Checkpoint) (r Report, err error) {
	s.settle()
	err = s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			v := &verifier{tx: tx, r: &r, want: map[uint64]events.Hash{}}
			for _, cp := range cps {
				v.want[cp.Seq] = cp.Hash
			}
			v.readMeta()
			v.chain()
			v.checkpoints(cps)
			r.Checkpoints = len(cps)
			if r.OK() {
				// The request index holds a copy of each record (what replay
				// reads): every copy must be the record the chain covers.
				checkCopies(tx, v.bad)
			}
			// The chain is intact; the B-trees under it (the indexes too)
			// must be as well, or the next append may trip over a lost page.
			// bbolt's check reads the shared freelist, so it is only sound
			// with no writer: in a read-only open (the file lock keeps every
			// writer out).
			if !s.opts.ReadOnly {
				return nil
			}
			var damage error
			for cerr := range tx.Check() { // drained: the check reads pages until it ends
				if damage == nil {
					damage = s.damaged(cerr)
				}
			}
			return damage
		})
	})
	if err != nil {
		r = Report{}
	}
	r.Appends = s.AppendStatus()
	return r, err
}

// verifier walks the chain in one read transaction and reports the first
// problem into r.
type verifier struct {
	tx       *bolt.Tx
	r        *Report
	want     map[uint64]events.Hash // the signed checkpoints' hashes, by seq
	anchor   Anchor
	prevHash events.Hash
	next     uint64 // the seq the next record must have
}

func (v *verifier) bad(seq uint64, format string, args ...any) {
	v.r.FirstBad, v.r.Problem = seq, fmt.Sprintf(format, args...)
}

// readMeta reads the head, the anchor (after archiving, the stored log
// starts after it: the first stored event's prev is the anchor's hash) and
// the stream position of a collector's store.
func (v *verifier) readMeta() {
	if meta := v.tx.Bucket(bucketMeta); meta != nil {
		if b := meta.Get(keyHead); len(b) == 40 {
			v.r.Head = binary.BigEndian.Uint64(b)
			copy(v.r.HeadHash[:], b[8:])
		}
		if b := meta.Get(keySource); len(b) >= 8 {
			v.r.Source = &Source{Stream: string(b[8:]), Seq: binary.BigEndian.Uint64(b)}
		}
		if l := readLost(v.tx); l.Count > 0 {
			v.r.Lost = &l
		}
	}
	v.anchor = readAnchor(v.tx)
	v.r.Anchor = v.anchor.Seq
	v.prevHash, v.next = v.anchor.Hash, v.anchor.Seq+1
}

// chain checks every stored record in seq order, then that the head
// names the last one.
func (v *verifier) chain() {
	if b := v.tx.Bucket(bucketEvents); b != nil {
		c := b.Cursor()
		for k, rec := c.First(); k != nil; k, rec = c.Next() {
			v.r.Events++
			if !v.record(k, rec) {
				return
			}
		}
	}
	last := v.next - 1
	switch {
	case v.r.Head != last:
		v.bad(min(v.r.Head, last)+1, "meta head is seq %d but the log ends at seq %d: the log was truncated or its head edited", v.r.Head, last)
	case v.r.HeadHash != v.prevHash:
		v.bad(last, "meta head hash differs from the hash of the last event")
	}
}

// record checks one stored record: its place, its link to the one before,
// its hash, a signed checkpoint at its seq and the payloads it refers to.
func (v *verifier) record(k, rec []byte) bool {
	if len(k) != 8 {
		v.bad(v.next, "malformed key %x", k)
		return false
	}
	seq := binary.BigEndian.Uint64(k)
	if seq != v.next {
		v.bad(v.next, "seq %d is missing (next stored is %d): events were deleted", v.next, seq)
		return false
	}
	body, prev, hash, err := events.SplitRecord(rec)
	if err != nil {
		v.bad(seq, "%v", err)
		return false
	}
	switch own, n := binary.Uvarint(body[1:]); {
	case n <= 0 || own != seq:
		v.bad(seq, "record says seq %d but is stored at %d: events were moved or reordered", own, seq)
	case prev != v.prevHash && seq == v.anchor.Seq+1 && v.anchor.Seq > 0:
		v.bad(seq, "prev hash does not match the archive's anchor (seq %d): the store does not continue the archive", v.anchor.Seq)
	case prev != v.prevHash:
		v.bad(seq, "prev hash does not match the hash of seq %d: the chain was cut or reordered", seq-1)
	case events.ChainHash(prev, body) != hash:
		v.bad(seq, "hash does not match the record's bytes: the event was edited")
	case v.want[seq] != (events.Hash{}) && v.want[seq] != hash:
		v.bad(seq, "hash differs from the signed checkpoint at seq %d: the log was rewritten", seq)
	default:
		if !checkPayloads(v.tx, seq, rec, v.bad) {
			return false
		}
		v.prevHash = hash
		v.next++
		return true
	}
	return false
}

// checkpoints reports a checkpoint past the end of an otherwise intact log:
// truncation or a rollback to an older copy (archived seqs are checked
// against the archive instead, by verify --archive).
func (v *verifier) checkpoints(cps []Checkpoint) {
	if !v.r.OK() {
		return
	}
	last := v.next - 1
	for _, cp := range cps {
		if cp.Seq > v.anchor.Seq && cp.Seq > last {
			v.bad(last+1, "the log ends at seq %d but a checkpoint signed at %s covers seq %d: the log was truncated or rolled back to an older copy",
				last, cp.Time.Format("2006-01-02T15:04:05Z07:00"), cp.Seq)
			return
		}
	}
}

// checkCopies compares every record copy in the request index with the
// record at its seq in the log. The index is walked in request order; the
// copies are checked in chunks sorted by seq, so the log is read forward
// rather than at random (the difference between warm and cold at 10M).
func checkCopies(tx *bolt.Tx, bad func(seq uint64, format string, args ...any)) {
	idx, evb := tx.Bucket(bucketByRequest), tx.Bucket(bucketEvents)
	if idx == nil || evb == nil {
		return
	}
	type ref struct {
		seq uint64
		v   []byte // valid for the transaction
	}
	refs := make([]ref, 0, 1<<16)
	check := func() bool {
		slices.SortFunc(refs, func(a, b ref) int { return cmp.Compare(a.seq, b.seq) })
		c := evb.Cursor()
		for _, r := range refs {
			k, v := c.Seek(seqKey(r.seq))
			if k == nil || binary.BigEndian.Uint64(k) != r.seq || !bytes.Equal(v, r.v) {
				bad(r.seq, "the request index's copy of seq %d differs from the log: the index was edited", r.seq)
				return false
			}
		}
		refs = refs[:0]
		return true
	}
	c := idx.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if len(k) != 24 || len(v) == 0 {
			continue // an entry of an older store: it points into the log
		}
		refs = append(refs, ref{binary.BigEndian.Uint64(k[16:]), v})
		if len(refs) == cap(refs) && !check() {
			return
		}
	}
	check()
}
