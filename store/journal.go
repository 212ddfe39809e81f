package store

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
)

// The journal is where an append becomes durable (ADR 0020): the writer
// appends a batch to it as one frame and fdatasyncs it once, then answers;
// the applier writes the batch into bbolt behind it. On open, frames the
// bbolt file does not hold yet are applied before anything else happens.
//
// The file is preallocated with zeros, so an fdatasync of a frame inside it
// writes only the frame's pages, never the file's size. Frames follow one
// another from offset 0:
//
//	length   uint32  of the body
//	crc      uint32  CRC-32C of the body
//	body     epoch u64 | first seq u64 | prev hash [32] |
//	         records: count uvarint, each: flags byte, length uvarint, record |
//	         payloads: count uvarint, each: length uvarint, bytes |
//	         source: stream seq uvarint (0: none), name length uvarint, name
//
// A frame's records carry their own chain hashes, and each frame must
// follow the one before (first seq, prev hash) in the same epoch. When
// every frame is applied the writer starts again at offset 0 with a new
// epoch: what follows the new frames is an older epoch's, and reading stops
// there, as it stops at a torn or zeroed frame.

// journalPath is the journal of the log at path.
func journalPath(path string) string { return path + ".journal" }

// The journal's sizes follow the applier's (apply.go): a rewind waits for the
// applier, so it comes once per journalRewind bytes — at the bridge's rate
// under load (~6 MB/s of records) every 0.7 s, not every 40 ms as with the
// 256 KiB journals made before issue 47, which a 4 MiB prealloc extends.
const (
	journalPrealloc = 4 << 20   // zeros written when the journal is made
	legacyPrealloc  = 256 << 10 // what journals were made with before
	journalRewind   = 4 << 20   // past this, start again at 0 once all is applied
	maxFrame        = 1 << 30   // a length beyond this is not a frame
	frameHeader     = 8
	flagIDs         = 1 // the record also goes into the ids tree
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// frame is one acknowledged batch: what the applier writes into bbolt.
type frame struct {
	first    uint64      // seq of the first record (the next seq when there is none)
	prev     events.Hash // the hash the first record follows
	recs     [][]byte
	flags    []byte
	keys     []recKeys // the ids each record is indexed under
	payloads []string
	sums     []events.Hash // the payloads' SHA-256
	src      *Source
}

// recKeys are the ids a record is indexed under.
type recKeys struct{ id, req, sess events.ID }

func keysOf(e *events.Event) recKeys {
	return recKeys{id: e.ID, req: e.RequestID, sess: e.SessionID}
}

// bytes is the size of the frame's records and payloads.
func (f *frame) bytes() int {
	n := 0
	for _, r := range f.recs {
		n += len(r)
	}
	for _, p := range f.payloads {
		n += len(p)
	}
	return n
}

// last returns the seq and hash after the frame.
func (f *frame) last() (uint64, events.Hash) {
	if len(f.recs) == 0 {
		return f.first - 1, f.prev
	}
	rec := f.recs[len(f.recs)-1]
	return f.first + uint64(len(f.recs)) - 1, events.Hash(rec[len(rec)-32:])
}

// journal is the writer's handle on the journal file.
type journal struct {
	f     *os.File
	off   int64 // where the next frame goes
	size  int64 // the file's size: writes below it change no metadata
	epoch uint64
	buf   []byte
}

// openJournal opens (or makes, preallocated) the journal at path.
func openJournal(path string) (*journal, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	j := &journal{f: f, size: st.Size(), epoch: newEpoch()}
	if j.size < journalPrealloc {
		if _, err := f.WriteAt(make([]byte, journalPrealloc-j.size), j.size); err != nil {
			f.Close()
			return nil, fmt.Errorf("preallocate the journal %s: %w", path, err)
		}
		j.size = journalPrealloc
		if err := j.sync(); err != nil {
			f.Close()
			return nil, err
		}
		if err := durable.SyncDir(filepath.Dir(path)); err != nil {
			f.Close()
			return nil, err
		}
	}
	return j, nil
}

func newEpoch() uint64 {
	for {
		if e := rand.Uint64(); e != 0 {
			return e
		}
	}
}

func (j *journal) sync() error {
	if skipFsync {
		return nil
	}
	return fdatasync(j.f)
}

// rewind makes the next frame go to offset 0 with a new epoch. Only when
// bbolt holds every frame written so far.
func (j *journal) rewind() {
	j.off = 0
	j.epoch = newEpoch()
}

// write appends f and syncs it. On an error the frame is not on record and
// the offset stays where it was, so the next frame overwrites it.
func (j *journal) write(f *frame) error {
	j.buf = encodeFrame(j.buf[:0], j.epoch, f)
	if _, err := j.f.WriteAt(j.buf, j.off); err != nil {
		return err
	}
	if err := j.sync(); err != nil {
		return err
	}
	j.off += int64(len(j.buf))
	j.size = max(j.size, j.off)
	return nil
}

// reset zeroes the first frame's header, durably: the journal reads as
// empty. Only when bbolt holds everything in it.
func (j *journal) reset() error {
	if _, err := j.f.WriteAt(make([]byte, frameHeader), 0); err != nil {
		return err
	}
	j.rewind()
	return j.sync()
}

func (j *journal) close() error { return j.f.Close() }

func encodeFrame(b []byte, epoch uint64, f *frame) []byte {
	b = append(b, make([]byte, frameHeader)...)
	b = binary.BigEndian.AppendUint64(b, epoch)
	b = binary.BigEndian.AppendUint64(b, f.first)
	b = append(b, f.prev[:]...)
	b = binary.AppendUvarint(b, uint64(len(f.recs)))
	for i, rec := range f.recs {
		b = append(b, f.flags[i])
		b = binary.AppendUvarint(b, uint64(len(rec)))
		b = append(b, rec...)
	}
	b = binary.AppendUvarint(b, uint64(len(f.payloads)))
	for _, p := range f.payloads {
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	if f.src == nil {
		b = binary.AppendUvarint(b, 0)
	} else {
		b = binary.AppendUvarint(b, f.src.Seq)
		b = binary.AppendUvarint(b, uint64(len(f.src.Stream)))
		b = append(b, f.src.Stream...)
	}
	body := b[frameHeader:]
	binary.BigEndian.PutUint32(b[0:4], uint32(len(body)))
	binary.BigEndian.PutUint32(b[4:8], crc32.Checksum(body, castagnoli))
	return b
}

// errFrame is a body that passed its checksum and still does not parse:
// written by a writer with a bug, never by a torn write.
var errFrame = errors.New("malformed journal frame")

// decodeFrame parses a body whose checksum matched; records are copied.
func decodeFrame(body []byte) (epoch uint64, f *frame, err error) {
	if len(body) < 48 {
		return 0, nil, errFrame
	}
	f = &frame{}
	epoch = binary.BigEndian.Uint64(body)
	f.first = binary.BigEndian.Uint64(body[8:])
	copy(f.prev[:], body[16:48])
	p := body[48:]
	next := func() uint64 {
		v, n := binary.Uvarint(p)
		if n <= 0 {
			err = errFrame
			return 0
		}
		p = p[n:]
		return v
	}
	bytesOf := func() []byte {
		n := next()
		if err != nil || n > uint64(len(p)) {
			err = errFrame
			return nil
		}
		v := p[:n]
		p = p[n:]
		return v
	}
	nrec := next()
	if err != nil || nrec > uint64(len(p)) {
		return 0, nil, errFrame
	}
	for range nrec {
		if len(p) == 0 {
			return 0, nil, errFrame
		}
		flag := p[0]
		p = p[1:]
		rec := bytesOf()
		if err != nil {
			return 0, nil, err
		}
		f.flags = append(f.flags, flag)
		f.recs = append(f.recs, append([]byte(nil), rec...))
	}
	npay := next()
	if err != nil || npay > uint64(len(p)) {
		return 0, nil, errFrame
	}
	for range npay {
		v := bytesOf()
		if err != nil {
			return 0, nil, err
		}
		f.payloads = append(f.payloads, string(v))
		f.sums = append(f.sums, sha256.Sum256(v))
	}
	if seq := next(); err == nil && seq != 0 {
		name := bytesOf()
		f.src = &Source{Stream: string(name), Seq: seq}
	}
	if err != nil || len(p) != 0 {
		return 0, nil, errFrame
	}
	return epoch, f, nil
}

// pendingFrames reads the journal at path and returns the frames past
// head, the seq (with its hash) bbolt holds: each checked against the one
// before and its records against their chain. Reading stops at the end of
// what one epoch wrote: a zeroed, torn or older frame. A missing journal
// has none.
//
// Only a torn tail may be dropped: when a frame bbolt does not hold comes
// after the point where reading stopped (damage in the middle: a flipped
// bit, a zeroed block), or the file is shorter than it is made (cut
// short), the error is a *JournalDamage: the frames returned are the
// readable ones before the damage, applied only by an explicit repair.
func pendingFrames(path string, head uint64, hash events.Hash) ([]*frame, error) {
	if reset, err := cleanlyReset(path, head); reset || err != nil {
		return nil, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	frames, stop, epoch, err := readFrames(b)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	var pending []*frame
	for _, fr := range frames {
		end, _ := fr.last()
		if end < head || (end == head && fr.first <= head) {
			continue // bbolt holds it
		}
		if fr.first <= head {
			// bbolt stops inside a frame: it applies frames whole, so this
			// journal was not written for this file.
			return nil, fmt.Errorf("journal %s: a frame holds seqs %d to %d but the log ends at %d inside it", path, fr.first, end, head)
		}
		if len(pending) == 0 && (fr.first != head+1 || fr.prev != hash) {
			return nil, fmt.Errorf("journal %s: its frames go on from seq %d but the log ends at %d (hash %s…): the journal does not follow this log", path, fr.first-1, head, hash.String()[:12])
		}
		pending = append(pending, fr)
	}
	if len(b) < journalPrealloc && len(b) != legacyPrealloc && slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
		return pending, &JournalDamage{Path: path, Offset: int64(len(b)), Head: readableHead(head, frames), Size: int64(len(b))}
	}
	if off, later := laterFrame(b, stop, head, epoch); later != nil {
		return pending, &JournalDamage{Path: path, Offset: int64(stop), Head: readableHead(head, frames), Next: later.first, At: int64(off)}
	}
	return pending, nil
}

// cleanlyReset says whether the journal at path holds nothing to apply
// and needs no scan for damage, from its first bytes alone: missing, or
// reset (its first header zeroed, what follows an applied frame of an older
// epoch or zeros). A new epoch always starts at offset 0, so nothing newer
// can lie past a reset header; a zeroed header over a frame bbolt lacks is
// damage and is read whole.
func cleanlyReset(path string, head uint64) (bool, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	var b [frameHeader + 16]byte
	n, _ := io.ReadFull(f, b[:])
	if n < frameHeader || binary.BigEndian.Uint64(b[:frameHeader]) != 0 {
		return n == 0, nil
	}
	return n < len(b) || binary.BigEndian.Uint64(b[frameHeader+8:]) <= head, nil
}

// readableHead is the last seq of bbolt or of the journal's readable
// frames.
func readableHead(head uint64, frames []*frame) uint64 {
	if len(frames) == 0 {
		return head
	}
	end, _ := frames[len(frames)-1].last()
	return max(head, end)
}

// JournalDamage is a journal that lost acknowledged frames: damage in its
// middle (a whole frame bbolt does not hold lies past the point where
// reading stopped) or a file cut short. Appends are refused until
// `tracebridge verify --repair-journal` applies what is readable, keeps the
// damaged file and records what was dropped.
type JournalDamage struct {
	Path   string
	Offset int64  // where reading stopped
	Head   uint64 // the last seq readable: bbolt's head, or the last frame before the damage
	Next   uint64 // the first seq of the frame found past the damage (0: cut short)
	At     int64  // that frame's offset
	Size   int64  // cut short: the file's size
}

func (d *JournalDamage) Error() string {
	if d.Next == 0 {
		return fmt.Sprintf("journal %s is cut short: %d bytes, less than the %d it is made with; acknowledged events after seq %d that were only in it may be lost",
			d.Path, d.Size, journalPrealloc, d.Head)
	}
	return fmt.Sprintf("journal %s is damaged at offset %d: the events after seq %d cannot be read, and a whole frame from seq %d follows at offset %d, so acknowledged events from seq %d on would be lost",
		d.Path, d.Offset, d.Head, d.Next, d.At, d.Head+1)
}

// readFrames reads one epoch's chain of frames from the start of b; stop
// is where it ended, epoch the chain's (0: no frame).
func readFrames(b []byte) (frames []*frame, stop int, epoch uint64, err error) {
	off := 0
	for {
		stop = off
		if off+frameHeader > len(b) {
			return frames, stop, epoch, nil // the end of the file
		}
		n := int64(binary.BigEndian.Uint32(b[off : off+4]))
		if n == 0 || n > maxFrame || n > int64(len(b)-off-frameHeader) {
			return frames, stop, epoch, nil // zeros (never written), or torn at the end
		}
		body := b[off+frameHeader : off+frameHeader+int(n)]
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[off+4:off+8]) {
			return frames, stop, epoch, nil // torn, or the remains of an older epoch
		}
		e, fr, err := decodeFrame(body)
		if err != nil {
			return frames, stop, epoch, err
		}
		if len(frames) == 0 {
			epoch = e
		} else if e != epoch {
			return frames, stop, epoch, nil // an older epoch's frame
		}
		if len(frames) > 0 {
			seq, hash := frames[len(frames)-1].last()
			if fr.first != seq+1 || fr.prev != hash {
				return frames, stop, epoch, nil // same epoch, not following: stop as for a torn frame
			}
		}
		if err := checkFrameChain(fr); err != nil {
			return frames, stop, epoch, err
		}
		frames = append(frames, fr)
		off += frameHeader + int(n)
	}
}

// laterFrame looks past from for a whole frame that bbolt (at head) does
// not hold: of epoch when one is known, else any (older epochs are all
// applied before the journal starts again). A torn tail has none after it;
// damage in the middle does. It returns the first such frame and its
// offset, or nil.
func laterFrame(b []byte, from int, head uint64, epoch uint64) (int, *frame) {
	for off := from; off+frameHeader+48 <= len(b); off++ {
		n := int(binary.BigEndian.Uint32(b[off : off+4]))
		if n < 48 || n > len(b)-off-frameHeader {
			continue
		}
		body := b[off+frameHeader : off+frameHeader+n]
		e, first := binary.BigEndian.Uint64(body), binary.BigEndian.Uint64(body[8:])
		if (epoch != 0 && e != epoch) || first <= head || first-head > 1<<40 {
			continue // cheap checks before the checksum
		}
		if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[off+4:off+8]) {
			continue
		}
		_, fr, err := decodeFrame(body)
		if err != nil {
			continue
		}
		if end, _ := fr.last(); end > head {
			return off, fr
		}
	}
	return 0, nil
}

// checkFrameChain checks that a frame's records chain from its prev hash
// and fills in the ids they are indexed under.
func checkFrameChain(f *frame) error {
	prev := f.prev
	f.keys = make([]recKeys, len(f.recs))
	for i, rec := range f.recs {
		body, p, h, err := events.SplitRecord(rec)
		if err != nil || p != prev || events.ChainHash(prev, body) != h {
			return fmt.Errorf("%w: record %d of the frame at seq %d does not chain", errFrame, i, f.first)
		}
		e, err := events.Decode(rec)
		if err != nil || e.Seq != f.first+uint64(i) {
			return fmt.Errorf("%w: record %d of the frame at seq %d: %v", errFrame, i, f.first, err)
		}
		f.keys[i] = keysOf(&e)
		prev = h
	}
	return nil
}
