package store

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// keySource is where a store materialized from a replicated stream keeps
// its position: seq (8) | stream name.
var keySource = []byte("source")

// Source is a position in a replicated stream: the last stream seq whose
// events this store holds.
type Source struct {
	Stream string
	Seq    uint64
}

// Source returns the stream position recorded by the last AppendFrom, or
// the zero Source for a store that never materialized a stream.
func (s *Store) Source() (Source, error) {
	var src Source
	err := s.view(func(tx *bolt.Tx) error {
		src = readSource(tx)
		return nil
	})
	return src, err
}

// AppendFrom is Append for a collector materializing a stream: evs are the
// events of stream messages up to src.Seq (none, for messages it refused),
// and src is recorded in the same transaction, so after a crash the store
// holds exactly the events up to its recorded position and resumes after
// it: no gap, no duplicate. Calls must come from one goroutine, in stream
// order; src.Seq must grow.
func (s *Store) AppendFrom(ctx context.Context, evs []events.Event, src Source) ([]uint64, error) {
	if src.Seq == 0 || src.Stream == "" {
		return nil, errors.New("append from a stream: no stream position")
	}
	return s.append(ctx, evs, &src)
}

// sourceValue is how meta keeps a stream position.
func sourceValue(src Source) []byte {
	return append(binary.BigEndian.AppendUint64(nil, src.Seq), src.Stream...)
}

// readSource is the stream position tx holds.
func readSource(tx *bolt.Tx) Source {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		if v := meta.Get(keySource); len(v) >= 8 {
			return Source{Stream: string(v[8:]), Seq: binary.BigEndian.Uint64(v)}
		}
	}
	return Source{}
}

// checkSource refuses a stream position that does not follow the last one
// written.
func (w *writerState) checkSource(batch []*appendReq) error {
	last := w.src
	for _, r := range batch {
		if r.src == nil {
			continue
		}
		if last.Stream != "" && r.src.Stream != last.Stream {
			return &positionError{fmt.Sprintf("store materializes stream %q, not %q", last.Stream, r.src.Stream)}
		}
		if r.src.Seq <= last.Seq {
			return &positionError{fmt.Sprintf("stream %s position %d does not follow %d", r.src.Stream, r.src.Seq, last.Seq)}
		}
		last = *r.src
	}
	return nil
}

// positionError fails a batch without stopping the store: nothing was
// written, the disk is fine, the caller's position is wrong.
type positionError struct{ msg string }

func (e *positionError) Error() string { return e.msg }
