package store

import (
	"bufio"
	"compress/gzip"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
)

// An archive is a directory of sealed segments — gzip files of the log's
// canonical records, each length-prefixed (uvarint) — and manifest.json
// listing them in order with their range, the hashes that link them, the
// file's SHA-256 and a checkpoint signed at the segment's last event.
// Together with the store's anchor they keep the whole history verifiable.

// ManifestFile is the archive's index.
const ManifestFile = "manifest.json"

// Segment is one sealed file of an archive.
type Segment struct {
	File       string      `json:"file"`
	First      uint64      `json:"first"`
	Last       uint64      `json:"last"`
	Prev       events.Hash `json:"prev"` // the hash the first record follows
	Hash       events.Hash `json:"hash"` // the last record's hash
	SHA256     string      `json:"sha256"`
	Checkpoint Checkpoint  `json:"checkpoint"`
	// Payloads names the file of the payloads the segment's events refer
	// to, with its SHA-256; "" when they refer to none.
	Payloads       string `json:"payloads,omitempty"`
	PayloadsSHA256 string `json:"payloadsSha256,omitempty"`
}

// Manifest lists an archive's segments in seq order.
type Manifest struct {
	Version  int       `json:"version"`
	Segments []Segment `json:"segments"`
}

// ReadManifest reads dir's manifest (none yet: an empty one).
func ReadManifest(dir string) (Manifest, error) {
	m := Manifest{Version: 1}
	f, err := openRegular(filepath.Join(dir, ManifestFile))
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return m, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return m, err
	}
	if err := json.Unmarshal(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", ManifestFile, err)
	}
	return m, nil
}

// signAt signs a checkpoint of (seq, hash) at now.
func signAt(key ed25519.PrivateKey, seq uint64, hash events.Hash, now time.Time) Checkpoint {
	cp := Checkpoint{Version: 1, Seq: seq, Hash: hash, Time: now.UTC().Round(0), PublicKey: key.Public().(ed25519.PublicKey)}
	cp.Signature = ed25519.Sign(key, cp.message())
	return cp
}

// ErrNothingToArchive is wrapped by ArchiveTo when the store holds no
// event up to the seq asked for.
var ErrNothingToArchive = errors.New("nothing to archive")

// ArchiveTo moves the events after the anchor up to seq upTo into a new
// sealed segment in dir and then drops them from the store: the segment
// and the manifest are written and synced (temp file, fsync, rename, fsync
// of the directory) before the one transaction that drops them. A crash at
// any step leaves either the old state, an unlisted segment file (written
// again by the next run), or a listed segment whose events the store still
// holds (the next run writes it again and drops them). step, when set, is
// called after each step (failpoints in tests).
func (s *Store) ArchiveTo(dir string, upTo uint64, key ed25519.PrivateKey, now time.Time, step func(string)) (Segment, error) {
	if step == nil {
		step = func(string) {}
	}
	anchor, err := s.Anchor()
	if err != nil {
		return Segment{}, err
	}
	if head, _ := s.Head(); upTo >= head {
		return Segment{}, fmt.Errorf("seq %d is not below the head %d: the newest event stays in the store", upTo, head)
	}
	if upTo <= anchor.Seq {
		return Segment{}, fmt.Errorf("%w: the store starts after seq %d already", ErrNothingToArchive, anchor.Seq)
	}
	if err := durable.MkdirAll(dir, 0o700); err != nil {
		return Segment{}, err
	}
	seg := Segment{First: anchor.Seq + 1, Last: upTo, Prev: anchor.Hash}
	seg.File = fmt.Sprintf("segment-%012d-%012d.tbseg", seg.First, seg.Last)
	sum, last, refs, err := s.writeSegment(filepath.Join(dir, seg.File), seg.First, upTo, anchor.Hash)
	if err != nil {
		return Segment{}, err
	}
	seg.SHA256, seg.Hash = sum, last
	if len(refs) > 0 {
		seg.Payloads = fmt.Sprintf("payloads-%012d-%012d.tbpay", seg.First, seg.Last)
		if seg.PayloadsSHA256, err = s.writePayloads(filepath.Join(dir, seg.Payloads), refs); err != nil {
			return Segment{}, err
		}
	}
	seg.Checkpoint = signAt(key, upTo, last, now)
	step("segment")
	m, err := ReadManifest(dir)
	if err != nil {
		return Segment{}, err
	}
	kept := m.Segments[:0]
	for _, old := range m.Segments {
		if old.First < seg.First { // a segment of an earlier run; one at the same place is replaced
			kept = append(kept, old)
		}
	}
	m.Segments = append(kept, seg)
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := durable.WriteFileAtomic(filepath.Join(dir, ManifestFile), b, 0o600); err != nil {
		return Segment{}, err
	}
	if err := durable.SyncDir(dir); err != nil {
		return Segment{}, err
	}
	removeUnlisted(dir, m)
	step("manifest")
	if _, err := s.Drop(upTo); err != nil {
		return Segment{}, err
	}
	step("drop")
	return seg, nil
}

// writeSegment writes records first..last (which must follow prev) to path
// durably and returns the file's SHA-256, the last record's hash and the
// payloads the records refer to.
func (s *Store) writeSegment(path string, first, last uint64, prev events.Hash) (_ string, _ events.Hash, refs []events.Hash, err error) {
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return "", prev, nil, err
	}
	defer os.Remove(tmp)
	h := sha256.New()
	bw := bufio.NewWriter(io.MultiWriter(f, h))
	zw := gzip.NewWriter(bw)
	hash := prev
	next := first
	for next <= last {
		recs, after, err := s.RangeRecords(next, 4096, 16<<20)
		if err != nil {
			f.Close()
			return "", prev, nil, err
		}
		if len(recs) == 0 {
			f.Close()
			return "", prev, nil, fmt.Errorf("seq %d is missing from the store", next)
		}
		for _, rec := range recs {
			if next > last {
				break
			}
			body, p, own, err := events.SplitRecord(rec)
			if err != nil || p != hash || events.ChainHash(p, body) != own {
				f.Close()
				return "", prev, nil, fmt.Errorf("seq %d does not verify; run `tracebridge verify` before archiving", next)
			}
			r, err := refsOf(rec)
			if err != nil {
				f.Close()
				return "", prev, nil, fmt.Errorf("seq %d: %w", next, err)
			}
			refs = append(refs, r...)
			var n [binary.MaxVarintLen64]byte
			zw.Write(n[:binary.PutUvarint(n[:], uint64(len(rec)))])
			zw.Write(rec)
			hash = own
			next++
		}
		next = max(next, after)
	}
	if err := zw.Close(); err != nil {
		f.Close()
		return "", prev, nil, err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return "", prev, nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return "", prev, nil, err
	}
	if err := f.Close(); err != nil {
		return "", prev, nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", prev, nil, err
	}
	if err := durable.SyncDir(filepath.Dir(path)); err != nil {
		return "", prev, nil, err
	}
	return hex.EncodeToString(h.Sum(nil)), hash, refs, nil
}

// removeUnlisted removes segment files the manifest does not list: the
// leftovers of a run that was stopped before listing them.
func removeUnlisted(dir string, m Manifest) {
	listed := map[string]bool{}
	for _, seg := range m.Segments {
		listed[seg.File] = true
	}
	for _, seg := range m.Segments {
		listed[seg.Payloads] = true
	}
	files, _ := filepath.Glob(filepath.Join(dir, "segment-*.tbseg*"))
	more, _ := filepath.Glob(filepath.Join(dir, "payloads-*.tbpay*"))
	for _, f := range append(files, more...) {
		if !listed[filepath.Base(f)] {
			os.Remove(f)
		}
	}
}

// ReadSegment calls fn with each record of a segment file, in order.
func ReadSegment(path string, fn func(rec []byte) error) error {
	_, err := readSegment(path, fn)
	return err
}

// readSegment is ReadSegment that also returns the SHA-256 of the file's
// bytes as read (all of them, past the gzip stream too). The file must be
// a regular one: a FIFO or a device named like a segment is an error, never
// a wait.
func readSegment(path string, fn func(rec []byte) error) (sum string, err error) {
	f, err := openRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	raw := bufio.NewReader(io.TeeReader(f, h))
	// Whatever stops the read, the file is hashed to its end: a segment
	// whose bytes were changed is said to be so, first.
	defer func() {
		if _, derr := io.Copy(io.Discard, raw); derr != nil && err == nil {
			err = derr
		}
		sum = hex.EncodeToString(h.Sum(nil))
	}()
	zr, err := gzip.NewReader(raw)
	if err != nil {
		return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
	}
	br := bufio.NewReader(zr)
	for {
		n, err := binary.ReadUvarint(br)
		if errors.Is(err, io.EOF) {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if n > events.MaxBatchBytes {
			return "", fmt.Errorf("%s: a record of %d bytes", filepath.Base(path), n)
		}
		rec := make([]byte, n)
		if _, err := io.ReadFull(br, rec); err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(path), err)
		}
		if err := fn(rec); err != nil {
			return "", err
		}
	}
}

// ArchivedRequest returns the events of request id found in the archive in
// dir, in seq order. Nothing is returned from an archive that does not
// verify — a segment's SHA-256, its records' chain, its checkpoint's
// signature by trusted (the data dir's key; nil: the key the checkpoint
// names): the error is verify's message, and no tampered event is ever
// presented as the run.
func ArchivedRequest(dir string, id events.ID, trusted ed25519.PublicKey) ([]events.Event, error) {
	var out []events.Event
	r, _, err := walkArchive(dir, trusted, func(rec []byte) error {
		e, err := events.Decode(rec)
		if err != nil {
			return err
		}
		if e.RequestID == id {
			out = append(out, e)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if !r.OK() {
		return nil, fmt.Errorf("the archive in %s does not verify, so nothing of it is shown: %s", dir, r)
	}
	return out, nil
}

// ArchivedEvents gives fn every event of the archive in dir, in seq order,
// each segment's only once the segment verified (its SHA-256, its records'
// chain, its checkpoint's signature by trusted): a segment that does not
// verify ends the walk with verify's message, and none of its events is
// given.
func ArchivedEvents(dir string, trusted ed25519.PublicKey, fn func(events.Event) error) error {
	r, _, err := walkArchive(dir, trusted, func(rec []byte) error {
		e, err := events.Decode(rec)
		if err != nil {
			return err
		}
		return fn(e)
	})
	if err != nil {
		return err
	}
	if !r.OK() {
		return fmt.Errorf("the archive in %s does not verify: %s", dir, r)
	}
	return nil
}
