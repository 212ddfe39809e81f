package events

import (
	"encoding/binary"
	"fmt"
)

// A batch frame carries several records in one bus message:
//
//	0x01 | uvarint n | (uvarint len | record)*
const batchV1 = 0x01

// MaxBatchBytes caps one batch frame: it stays below the NATS default max
// payload of 1 MiB.
const MaxBatchBytes = 900 << 10

// MaxBatchEvents caps the number of records one frame may claim.
const MaxBatchEvents = 4096

// EncodeBatch encodes events as one frame.
func EncodeBatch(evs []Event) []byte {
	b := make([]byte, 0, 64+len(evs)*300)
	b = append(b, batchV1)
	b = binary.AppendUvarint(b, uint64(len(evs)))
	var rec []byte
	for i := range evs {
		rec = appendEncode(rec[:0], &evs[i])
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
	}
	return b
}

// EncodeRecords frames already-encoded records (as the store keeps them).
func EncodeRecords(recs [][]byte) []byte {
	size := 16
	for _, r := range recs {
		size += len(r) + binary.MaxVarintLen32
	}
	b := make([]byte, 0, size)
	b = append(b, batchV1)
	b = binary.AppendUvarint(b, uint64(len(recs)))
	for _, r := range recs {
		b = binary.AppendUvarint(b, uint64(len(r)))
		b = append(b, r...)
	}
	return b
}

// DecodeBatch parses a frame made by EncodeBatch or EncodeRecords. Sizes are
// checked against the frame before anything is allocated.
func DecodeBatch(b []byte) ([]Event, error) {
	recs, err := SplitBatch(b)
	if err != nil {
		return nil, err
	}
	evs := make([]Event, len(recs))
	for i, r := range recs {
		if err := DecodeInto(&evs[i], r); err != nil {
			return nil, fmt.Errorf("batch record %d: %w", i, err)
		}
	}
	return evs, nil
}

// SplitBatch returns the records of a frame without decoding them (they
// share b's memory), for a reader that decodes each record once itself.
func SplitBatch(b []byte) ([][]byte, error) {
	if len(b) > MaxBatchBytes {
		return nil, fmt.Errorf("%w: batch of %d bytes exceeds the %d-byte cap", ErrMalformed, len(b), MaxBatchBytes)
	}
	if len(b) < 2 || b[0] != batchV1 {
		return nil, fmt.Errorf("%w: not a v1 batch frame", ErrMalformed)
	}
	n, k := binary.Uvarint(b[1:])
	if k <= 0 || k != uvarintLen(n) {
		return nil, fmt.Errorf("%w: batch count is not a varint", ErrMalformed)
	}
	if n > MaxBatchEvents || n > uint64(len(b)) {
		return nil, fmt.Errorf("%w: batch claims %d events (cap %d)", ErrMalformed, n, MaxBatchEvents)
	}
	off := 1 + k
	recs := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b[off:])
		if k <= 0 || k != uvarintLen(l) || l > uint64(len(b)-off-k) {
			return nil, fmt.Errorf("%w: batch record %d: bad length", ErrMalformed, i)
		}
		off += k
		recs = append(recs, b[off:off+int(l)])
		off += int(l)
	}
	if off != len(b) {
		return nil, fmt.Errorf("%w: %d trailing bytes after batch", ErrMalformed, len(b)-off)
	}
	return recs, nil
}

func uvarintLen(x uint64) int { return len(binary.AppendUvarint(nil, x)) }
