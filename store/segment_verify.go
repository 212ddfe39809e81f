package store

import (
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"path/filepath"

	"github.com/tracebridge/tracebridge/events"
)

// ArchiveReport is what VerifyArchive found.
type ArchiveReport struct {
	Segments int    `json:"segments"`
	Events   uint64 `json:"events"`
	Last     uint64 `json:"last"` // the last archived seq
	FirstBad uint64 `json:"firstBad,omitempty"`
	Problem  string `json:"problem,omitempty"`
}

// OK reports whether the archive verified.
func (r ArchiveReport) OK() bool { return r.Problem == "" }

func (r ArchiveReport) String() string {
	if r.OK() {
		return fmt.Sprintf("archive ok: %d segments, %d events, seq 1 to %d, signed and linked to the store", r.Segments, r.Events, r.Last)
	}
	return fmt.Sprintf("archive broken at seq %d: %s", r.FirstBad, r.Problem)
}

// VerifyArchive checks the archive in dir and its link to the store: the
// segments run from seq 1 without gaps, each file has the SHA-256 the
// manifest names, every record's bytes match its hash and follow the one
// before (across segments too), each segment's checkpoint is signed by
// trusted (nil: the key it names) at its last record, and the store starts
// where the archive ends (or still holds the archive's last events, as a
// crash between writing a segment and dropping its events leaves it).
func (s *Store) VerifyArchive(dir string, trusted ed25519.PublicKey) (ArchiveReport, error) {
	r, prev, err := walkArchive(dir, trusted, nil)
	if err != nil || !r.OK() {
		return r, err
	}
	bad := func(seq uint64, format string, args ...any) (ArchiveReport, error) {
		r.FirstBad, r.Problem = seq, fmt.Sprintf(format, args...)
		return r, nil
	}
	anchor, err := s.Anchor()
	if err != nil {
		return r, err
	}
	switch {
	case anchor.Seq > r.Last:
		return bad(r.Last+1, "the store starts after seq %d but the archive ends at seq %d: segments are missing", anchor.Seq, r.Last)
	case anchor.Seq == r.Last && anchor.Hash != prev:
		return bad(r.Last, "the store's anchor does not match the archive's last hash: they are not the same history")
	case anchor.Seq < r.Last && r.Last > 0:
		recs, _, err := s.RangeRecords(r.Last, 1, 1<<20)
		if err != nil || len(recs) == 0 {
			return bad(r.Last, "the archive ends at seq %d, which the store neither holds nor starts after", r.Last)
		}
		if _, _, own, err := events.SplitRecord(recs[0]); err != nil || own != prev {
			return bad(r.Last, "the store's seq %d differs from the archive's", r.Last)
		}
	}
	return r, nil
}

// walkArchive checks the archive in dir segment by segment — the segments
// run from seq 1 without gaps, each file has the SHA-256 the manifest
// names (hashed as it is read, so what is checked is what was read), every
// record's bytes match its hash and follow the one before (across segments
// too), each segment's checkpoint is signed by trusted (nil: the key it
// names) at its last record — and calls fn, when set, with each record of
// a segment once that segment verified. A problem is the report's; an
// error is one the walk could not go past. It returns the last hash.
func walkArchive(dir string, trusted ed25519.PublicKey, fn func(rec []byte) error) (ArchiveReport, events.Hash, error) {
	var r ArchiveReport
	var prev events.Hash
	m, err := ReadManifest(dir)
	if err != nil {
		return r, prev, err
	}
	bad := func(seq uint64, format string, args ...any) (ArchiveReport, events.Hash, error) {
		r.FirstBad, r.Problem = seq, fmt.Sprintf(format, args...)
		return r, prev, nil
	}
	next := uint64(1)
	for _, seg := range m.Segments {
		r.Segments++
		if seg.First != next || seg.Prev != prev {
			return bad(next, "segment %s starts at seq %d after %d: a segment is missing or out of order", seg.File, seg.First, next-1)
		}
		held, problem := segmentPayloads(dir, seg) // by the hash each was found to have
		if problem != "" {
			return bad(seg.First, "%s", problem)
		}
		var broken string
		var recs [][]byte // the segment's records, handed to fn once it verified
		sum, err := readSegment(filepath.Join(dir, filepath.Base(seg.File)), func(rec []byte) error {
			var own events.Hash
			if own, broken = checkArchived(rec, next, prev, held); broken != "" {
				return ErrStop
			}
			if fn != nil {
				recs = append(recs, rec)
			}
			prev = own
			next++
			r.Events++
			return nil
		})
		switch {
		case sum == "": // not read at all: missing, or not a regular file
			return bad(seg.First, "segment %s: %v", seg.File, err)
		case sum != seg.SHA256:
			return bad(seg.First, "segment %s does not have the SHA-256 the manifest names: it was changed", seg.File)
		case broken != "":
			return bad(next, "segment %s: %s", seg.File, broken)
		case err != nil:
			return bad(next, "segment %s: %v", seg.File, err)
		}
		if next-1 != seg.Last || prev != seg.Hash {
			return bad(next, "segment %s ends at seq %d, the manifest says %d", seg.File, next-1, seg.Last)
		}
		cp := seg.Checkpoint
		if err := cp.CheckSignature(trusted); err != nil || cp.Seq != seg.Last || cp.Hash != seg.Hash {
			return bad(seg.Last, "segment %s: its checkpoint does not sign its last record (%v)", seg.File, err)
		}
		for _, rec := range recs {
			if err := fn(rec); err != nil {
				return r, prev, err
			}
		}
	}
	r.Last = next - 1
	return r, prev, nil
}

// segmentPayloads reads the payloads file of seg, checked against the
// SHA-256 the manifest names; problem says what is wrong ("" for nothing).
func segmentPayloads(dir string, seg Segment) (held map[events.Hash]int, problem string) {
	if seg.Payloads == "" {
		return nil, ""
	}
	held, psum, err := readPayloads(filepath.Join(dir, filepath.Base(seg.Payloads)))
	switch {
	case psum == "":
		return nil, fmt.Sprintf("the payloads of segment %s: %v", seg.File, err)
	case psum != seg.PayloadsSHA256:
		return nil, fmt.Sprintf("%s does not have the SHA-256 the manifest names: it was changed", seg.Payloads)
	case err != nil:
		return nil, fmt.Sprintf("the payloads of segment %s: %v", seg.File, err)
	}
	return held, ""
}

// checkArchived is what is wrong with the archived record rec, which
// belongs at seq next after a record hashed prev, and whose payloads must
// be among held ("" for nothing); own is its hash.
func checkArchived(rec []byte, next uint64, prev events.Hash, held map[events.Hash]int) (own events.Hash, problem string) {
	body, p, own, err := events.SplitRecord(rec)
	switch {
	case err != nil:
		return own, err.Error()
	case len(body) < 2:
		return own, "a record without a body"
	}
	if seq, n := binary.Uvarint(body[1:]); n <= 0 || seq != next {
		return own, fmt.Sprintf("record says seq %d where %d belongs", seq, next)
	}
	switch {
	case p != prev:
		return own, "prev hash does not match the record before"
	case events.ChainHash(p, body) != own:
		return own, "hash does not match the record's bytes"
	}
	refs, err := refsOf(rec)
	if err != nil {
		return own, err.Error()
	}
	for _, sum := range refs {
		if _, ok := held[sum]; !ok {
			return own, fmt.Sprintf("the record refers to payload %s…, which the archive does not hold whole", sum.String()[:12])
		}
	}
	return own, ""
}
