package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// The payload store: attribute values too long for an event, kept whole
// in the bucket payloads (SHA-256 → bytes) of the same file, written by the
// same writer in the same group commits as the events. A payload is stored
// before any event that refers to it is taken (Append refuses a reference
// to a payload it does not hold), so an acknowledged event's payload is
// never missing, and the chain covers it through the reference, which
// names its hash. Verify reads every referenced payload back and hashes it.

var bucketPayloads = []byte("payloads")

var (
	_ events.PayloadStore  = (*Store)(nil)
	_ events.PayloadReader = (*Store)(nil)
)

// PutPayloads stores ps durably and returns once they are committed.
// Payloads stored already are not written again.
func (s *Store) PutPayloads(ctx context.Context, ps []string) error {
	if len(ps) == 0 {
		return nil
	}
	_, err := s.send(ctx, &appendReq{payloads: ps, done: make(chan struct{})})
	return err
}

// Payload returns the payload whose SHA-256 is sum.
func (s *Store) Payload(_ context.Context, sum events.Hash) (string, error) {
	var p string
	err := s.view(func(tx *bolt.Tx) error {
		v, err := payloadIn(tx, sum)
		p = string(v)
		return err
	})
	return p, err
}

// payloadIn is the stored payload sum, valid for tx.
func payloadIn(tx *bolt.Tx, sum events.Hash) ([]byte, error) {
	var v []byte
	if b := tx.Bucket(bucketPayloads); b != nil {
		v = b.Get(sum[:])
	}
	if v == nil {
		return nil, fmt.Errorf("payload %s: %w", sum, events.ErrNoPayload)
	}
	return v, nil
}

// PayloadPart returns up to n bytes of the payload whose SHA-256 is sum,
// from byte off, and the payload's size: a reader that takes a long payload
// in parts copies only the part.
func (s *Store) PayloadPart(sum events.Hash, off, n int) (part []byte, size int, err error) {
	err = s.view(func(tx *bolt.Tx) error {
		v, err := payloadIn(tx, sum)
		if err != nil {
			return err
		}
		size = len(v)
		if off < 0 || off > size || n < 0 {
			return fmt.Errorf("payload %s: part at %d of %d bytes", sum, off, size)
		}
		part = append([]byte(nil), v[off:min(size, off+n)]...)
		return nil
	})
	return part, size, err
}

// missingPayload names the first payload an event of evs refers to that
// the store does not hold, or "" when it holds them all.
func (s *Store) missingPayload(evs []events.Event) (string, error) {
	var refs []events.Hash
	for i := range evs {
		refs = append(refs, evs[i].Refs()...)
	}
	if len(refs) == 0 {
		return "", nil
	}
	// A payload acknowledged and not yet applied is in the applier's
	// count; one it no longer counts is in bbolt (it counts until the
	// transaction holding it has committed).
	s.amu.Lock()
	var unseen []events.Hash
	for _, sum := range refs {
		if s.ap == nil || s.ap.payloads[sum] == 0 {
			unseen = append(unseen, sum)
		}
	}
	s.amu.Unlock()
	if len(unseen) == 0 {
		return "", nil
	}
	missing := ""
	err := s.guard(func() error {
		return s.db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketPayloads)
			for _, sum := range unseen {
				if b == nil || b.Get(sum[:]) == nil {
					missing = sum.String()
					return nil
				}
			}
			return nil
		})
	})
	return missing, err
}

// payloadMark is how a record that may refer to a payload starts one:
// records without it are not decoded by verify's payload check.
var payloadMark = []byte(events.PayloadPrefix)

// checkPayloads verifies, for one record, that every payload it refers to
// is stored and hashes to the hash its reference names.
func checkPayloads(tx *bolt.Tx, seq uint64, rec []byte, bad func(seq uint64, format string, args ...any)) bool {
	if !bytes.Contains(rec, payloadMark) {
		return true
	}
	e, err := events.Decode(rec)
	if err != nil {
		bad(seq, "%v", err)
		return false
	}
	b := tx.Bucket(bucketPayloads)
	for _, a := range e.Attrs {
		sum, size, ok := events.ParseRef(a.Value)
		if !ok {
			continue
		}
		var v []byte
		if b != nil {
			v = b.Get(sum[:])
		}
		switch {
		case v == nil:
			bad(seq, "attribute %s refers to payload %s…, which is not stored: the payload was deleted", a.Key, sum.String()[:12])
			return false
		case len(v) != size || sha256.Sum256(v) != [32]byte(sum):
			bad(seq, "payload %s… of attribute %s does not hash to its reference: the payload was edited", sum.String()[:12], a.Key)
			return false
		}
	}
	return true
}
