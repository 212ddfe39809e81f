package store

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
)

// An archived segment whose events refer to payloads carries them in a
// file of its own beside it, payloads-<first>-<last>.tbpay: a gzip stream of
// sha256[32] | uvarint size | bytes, one per payload, listed in the manifest
// with its SHA-256. The archive then stands alone: verify --archive checks
// that every reference of an archived record names a payload of its
// segment's file that hashes to it. (Archiving does not remove a payload
// from the live store: a later event may refer to it too.)

// refsOf returns the payloads an encoded record refers to.
func refsOf(rec []byte) ([]events.Hash, error) {
	if !bytes.Contains(rec, payloadMark) {
		return nil, nil
	}
	e, err := events.Decode(rec)
	if err != nil {
		return nil, err
	}
	return e.Refs(), nil
}

// writePayloads writes the payloads sums name, read from the store, to
// path durably, and returns the file's SHA-256.
func (s *Store) writePayloads(path string, sums []events.Hash) (string, error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(f, h))
	zw := gzip.NewWriter(bw)
	seen := map[events.Hash]bool{}
	for _, sum := range sums {
		if seen[sum] {
			continue
		}
		seen[sum] = true
		p, err := s.Payload(context.Background(), sum)
		if err != nil {
			f.Close()
			return "", fmt.Errorf("archive: %w; run `tracebridge verify` before archiving", err)
		}
		var n [binary.MaxVarintLen64]byte
		zw.Write(sum[:])
		zw.Write(n[:binary.PutUvarint(n[:], uint64(len(p)))])
		io.WriteString(zw, p)
	}
	for _, step := range []func() error{zw.Close, bw.Flush, f.Sync, f.Close} {
		if err := step(); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), durable.SyncDir(filepath.Dir(path))
}

// readPayloads reads a segment's payload file (a regular file only) and
// returns the size of each payload it holds that hashes to its sum, and the
// SHA-256 of the file as read. A payload that does not hash to its sum is
// left out: a reference to it is then one the archive does not hold.
func readPayloads(path string) (map[events.Hash]int, string, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	h := sha256.New()
	raw := bufio.NewReader(io.TeeReader(f, h))
	held := map[events.Hash]int{}
	zr, err := gzip.NewReader(raw)
	if err != nil {
		io.Copy(io.Discard, raw)
		return nil, hex.EncodeToString(h.Sum(nil)), fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	br := bufio.NewReader(zr)
	var rerr error
	for {
		var sum events.Hash
		if _, err := io.ReadFull(br, sum[:]); err != nil {
			if !errors.Is(err, io.EOF) {
				rerr = fmt.Errorf("%s: %w", filepath.Base(path), err)
			}
			break
		}
		n, err := binary.ReadUvarint(br)
		if err != nil || n > uint64(events.DefaultMaxPayload)*4 {
			rerr = fmt.Errorf("%s: a payload of %d bytes (%v)", filepath.Base(path), n, err)
			break
		}
		ph := sha256.New()
		if _, err := io.CopyN(ph, br, int64(n)); err != nil {
			rerr = fmt.Errorf("%s: %w", filepath.Base(path), err)
			break
		}
		if [32]byte(ph.Sum(nil)) == [32]byte(sum) {
			held[sum] = int(n)
		}
	}
	io.Copy(io.Discard, raw) // the file is hashed to its end, whatever stopped the read
	return held, hex.EncodeToString(h.Sum(nil)), rerr
}
