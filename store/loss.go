package store

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// keyLost is where a collector's store keeps what its stream lost before
// it stored it: count (8) | first seq (8) | last seq (8) of the lost
// messages, cumulative.
var keyLost = []byte("stream.lost")

// Lost is what a stream lost before this store collected it: messages
// deleted or purged (a member with too many rights, or limits on the
// stream), from First to Last in all, Count of them.
type Lost struct {
	Count, First, Last uint64
}

func (l Lost) String() string {
	return fmt.Sprintf("%d stream message(s) were gone before this collector stored them (stream seqs %d to %d)", l.Count, l.First, l.Last)
}

// RecordLoss adds stream seqs from..to, which the stream no longer held
// when this collector reached them, to what Verify reports as lost.
func (s *Store) RecordLoss(from, to uint64) error {
	return s.update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return fmt.Errorf("record a stream loss: no meta bucket")
		}
		l := readLost(tx)
		if l.Count > 0 && to <= l.Last {
			return nil // recorded already (a collector that resumed before storing past it)
		}
		if l.Count == 0 {
			l.First = from
		}
		l.Count += to - from + 1
		l.Last = max(l.Last, to)
		v := binary.BigEndian.AppendUint64(nil, l.Count)
		v = binary.BigEndian.AppendUint64(v, l.First)
		return meta.Put(keyLost, binary.BigEndian.AppendUint64(v, l.Last))
	})
}

func readLost(tx *bolt.Tx) Lost {
	if meta := tx.Bucket(bucketMeta); meta != nil {
		if v := meta.Get(keyLost); len(v) == 24 {
			return Lost{Count: binary.BigEndian.Uint64(v), First: binary.BigEndian.Uint64(v[8:]), Last: binary.BigEndian.Uint64(v[16:])}
		}
	}
	return Lost{}
}
