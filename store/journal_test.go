package store

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// appendHeld appends n batches of 3 events (and a payload each) to a store
// whose applier never runs, closes it (a crash between the journal and
// bbolt) and returns the acknowledged ids.
func appendHeld(t *testing.T, path string, n int) []events.ID {
	t.Helper()
	s, err := Open(path, Options{holdApply: true})
	if err != nil {
		t.Fatal(err)
	}
	var acked []events.ID
	for i := range n {
		req := testIDs.New()
		p := strings.Repeat("payload ", 100) + req.String()
		if err := s.PutPayloads(context.Background(), []string{p}); err != nil {
			t.Fatal(err)
		}
		batch := []events.Event{ev(req, 3*i), ev(req, 3*i+1), ev(req, 3*i+2)}
		batch[0].Attrs.Set("answer", events.PayloadRef(p))
		if _, err := s.Append(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		for _, e := range batch {
			acked = append(acked, e.ID)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return acked
}

// TestAcknowledgedButNotAppliedIsAppliedAtOpen: events acknowledged into
// the journal and never written into bbolt are there after the next open,
// the chain verifies, payloads included; a second open applies nothing.
func TestAcknowledgedButNotAppliedIsAppliedAtOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	acked := appendHeld(t, path, 5)

	head, _, err := bboltHead(path)
	if err != nil || head != 0 {
		t.Fatalf("bbolt holds seq %d (%v) before the open: the applier ran", head, err)
	}
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if missing, err := s.Missing(acked); err != nil || len(missing) != 0 {
		t.Fatalf("after the open %d of %d acknowledged events are missing (%v)", len(missing), len(acked), err)
	}
	if rep, err := s.Verify(); err != nil || !rep.OK() || rep.Events != 15 {
		t.Fatalf("verify: %s %v", rep, err)
	}
	if got, _ := s.Head(); got != 15 {
		t.Fatalf("head %d, want 15", got)
	}
	// Appends go on from the applied tail.
	req := testIDs.New()
	if seqs, err := s.Append(context.Background(), []events.Event{ev(req, 99)}); err != nil || seqs[0] != 16 {
		t.Fatalf("append after the recovery: %v %v", seqs, err)
	}
	s.Close()
	if head, _, _ := bboltHead(path); head != 16 {
		t.Fatalf("bbolt holds seq %d after a clean close, want 16", head)
	}
}

// TestTornJournalTailIsNotApplied: a frame cut short, or one whose bytes
// changed, ends the journal: the frames before it are applied, it and
// what follows are not, and the log verifies.
func TestTornJournalTailIsNotApplied(t *testing.T) {
	for _, tc := range []struct {
		name string
		tear func(b []byte, last int) []byte
	}{
		{"cut short", func(b []byte, last int) []byte { clear(b[last+(len(b)-last)/2:]); return b }},
		{"a flipped byte", func(b []byte, last int) []byte { b[last+20] ^= 1; return b }},
		{"zeroed", func(b []byte, last int) []byte { clear(b[last:]); return b }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			acked := appendHeld(t, path, 3) // frames: payload, events, ×3
			b, err := os.ReadFile(journalPath(path))
			if err != nil {
				t.Fatal(err)
			}
			offs := frameOffsets(t, b)
			if len(offs) != 6 {
				t.Fatalf("%d frames in the journal, want 6", len(offs))
			}
			end := offs[5] + 8 + int(beUint32(b[offs[5]:]))
			tail := slices.Clone(b[end:]) // the preallocated zeros after it
			b = append(tc.tear(b[:end], offs[5]), tail...)[:len(b)]
			if err := os.WriteFile(journalPath(path), b, 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if missing, _ := s.Missing(acked[:6]); len(missing) != 0 {
				t.Fatalf("%d events of the whole frames are missing", len(missing))
			}
			if missing, _ := s.Missing(acked[6:]); len(missing) != 3 {
				t.Fatalf("the torn frame's events: %d of 3 missing, want all", len(missing))
			}
			if rep, err := s.Verify(); err != nil || !rep.OK() || rep.Events != 6 {
				t.Fatalf("verify: %s %v", rep, err)
			}
		})
	}
}

// TestJournalThatDoesNotFollowTheLogIsRefused: frames that go on from
// another point than the log's head (a log file swapped under its
// journal) are not applied; appends are refused and say why; the log
// itself reads and verifies.
func TestJournalThatDoesNotFollowTheLogIsRefused(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "events.db")
	appendHeld(t, path, 1)
	other := filepath.Join(dir, "other.db")
	appendHeld(t, other, 3) // frames past this log's head, from another chain
	journal, err := os.ReadFile(journalPath(other))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Open(path, Options{}) // applies its own
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.WriteFile(journalPath(path), journal, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatalf("open with another log's journal: %v", err)
	}
	defer s.Close()
	if st := s.AppendStatus(); !strings.Contains(st, "does not follow this log") || !strings.HasPrefix(st, string(events.CodeChainBroken)) {
		t.Fatalf("append status with another log's journal: %q", st)
	}
	if _, err := s.Append(context.Background(), []events.Event{ev(testIDs.New(), 1)}); err == nil {
		t.Fatal("an append was taken beside a journal that does not follow the log")
	}
	if rep, err := s.Verify(); err != nil || !rep.OK() || rep.Events != 3 || rep.Healthy() {
		t.Fatalf("the log itself still reads and verifies: %s %v", rep, err)
	}
}

// TestReadOnlyOpenSeesTheJournal: a read-only open of a log whose journal
// holds acknowledged frames applies them first (opening writable once).
// The journal ends with a frame of payloads only (their events never
// came), which moves no head: a read-only open still ends, twice.
func TestReadOnlyOpenSeesTheJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	acked := appendHeld(t, path, 2)
	s, err := Open(path, Options{holdApply: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PutPayloads(context.Background(), []string{"a payload whose event never came"}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for range 2 {
		s, err := Open(path, Options{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		if missing, err := s.Missing(acked); err != nil || len(missing) != 0 {
			t.Fatalf("read-only: %d of %d acknowledged events missing (%v)", len(missing), len(acked), err)
		}
		if p, err := s.Payload(context.Background(), sha256.Sum256([]byte("a payload whose event never came"))); err != nil || p == "" {
			t.Fatalf("the payload-only frame: %q %v", p, err)
		}
		s.Close()
	}
}

// TestJournalStartsAgainOnceApplied: past journalRewind the journal goes
// back to offset 0 with a new epoch, so it stays near its preallocated
// size however much is appended, and a reopen applies nothing old.
func TestJournalStartsAgainOnceApplied(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 4000)
	n := 3 * journalRewind / 4000 // three times the rewind's worth of records
	for i := range n {
		e := ev(testIDs.New(), i)
		e.Attrs.Set("pad", pad)
		if _, err := s.Append(context.Background(), []events.Event{e}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	st, err := os.Stat(journalPath(path))
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > journalPrealloc+journalRewind {
		t.Fatalf("the journal is %d bytes after %d MB of appends: it did not start again", st.Size(), n*4000>>20)
	}
	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if rep, err := s.Verify(); err != nil || !rep.OK() || rep.Events != uint64(n) {
		t.Fatalf("verify: %s %v", rep, err)
	}
}

// FuzzJournal: whatever the journal file holds, reading it returns whole
// frames that chain, or an error; never a panic.
func FuzzJournal(f *testing.F) {
	dir := f.TempDir()
	path := filepath.Join(dir, "events.db")
	s, err := Open(path, Options{holdApply: true})
	if err != nil {
		f.Fatal(err)
	}
	req := testIDs.New()
	s.PutPayloads(context.Background(), []string{"a payload"})
	s.Append(context.Background(), []events.Event{ev(req, 1), ev(req, 2)})
	s.AppendFrom(context.Background(), []events.Event{ev(req, 3)}, Source{Stream: "s", Seq: 7})
	s.Close()
	b, _ := os.ReadFile(journalPath(path))
	offs := frameOffsets(f, b)
	f.Add(b[:offs[len(offs)-1]+200])
	f.Add([]byte{})
	f.Add(make([]byte, 16))
	f.Fuzz(func(t *testing.T, b []byte) {
		frames, stop, epoch, err := readFrames(b)
		if err != nil {
			return
		}
		if stop > len(b) {
			t.Fatalf("stopped at %d of %d bytes", stop, len(b))
		}
		if off, fr := laterFrame(b, stop, 0, epoch); fr != nil && (off < stop || off >= len(b)) {
			t.Fatalf("a later frame at %d, outside %d..%d", off, stop, len(b))
		}
		for i, fr := range frames {
			if len(fr.recs) != len(fr.flags) || len(fr.recs) != len(fr.keys) || len(fr.payloads) != len(fr.sums) {
				t.Fatalf("frame %d: %d records, %d flags, %d keys", i, len(fr.recs), len(fr.flags), len(fr.keys))
			}
			if i > 0 {
				seq, hash := frames[i-1].last()
				if fr.first != seq+1 || fr.prev != hash {
					t.Fatalf("frame %d does not follow the one before", i)
				}
			}
		}
	})
}

// frameOffsets returns where each of the first epoch's frames starts.
func frameOffsets(t testing.TB, b []byte) []int {
	t.Helper()
	var offs []int
	for off := 0; off+8 <= len(b); {
		n := int(beUint32(b[off:]))
		if n == 0 || off+8+n > len(b) {
			break
		}
		offs = append(offs, off)
		off += 8 + n
	}
	return offs
}

func beUint32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// bboltHead reads the head bbolt itself holds, past the journal.
func bboltHead(path string) (uint64, events.Hash, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		return 0, events.Hash{}, err
	}
	defer db.Close()
	var seq uint64
	var hash events.Hash
	err = db.View(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if meta == nil {
			return nil
		}
		if v := meta.Get(keyHead); len(v) == 40 {
			seq = binary.BigEndian.Uint64(v)
			copy(hash[:], v[8:])
		}
		return nil
	})
	return seq, hash, err
}

// F-J2: damage in the middle of the journal (a flipped bit, a zeroed block)
// with whole frames after it, or a journal cut short, is corruption, not a
// torn tail: the open names the file and offset, appends are refused, the
// report is not healthy. RepairJournal applies what is readable before the
// damage, keeps the damaged file and starts a new journal. (The torn tail,
// its harmless twin, is TestTornJournalTailIsNotApplied.)
func TestJournalDamageIsNamedNotDropped(t *testing.T) {
	for _, tc := range []struct {
		name, says string
		damage     func(b []byte, offs []int) []byte
		readable   int // batches of 3 events readable before the damage
	}{
		{"a flipped bit", "damaged at offset", func(b []byte, offs []int) []byte { b[offs[5]+40] ^= 0x40; return b }, 2},
		{"a zeroed block", "damaged at offset", func(b []byte, offs []int) []byte { clear(b[offs[4]:offs[6]]); return b }, 2},
		{"cut short", "cut short", func(b []byte, offs []int) []byte { return b[:offs[5]+10] }, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.db")
			acked := appendHeld(t, path, 6) // frames: payload, events, ×6
			b, err := os.ReadFile(journalPath(path))
			if err != nil {
				t.Fatal(err)
			}
			offs := frameOffsets(t, b)
			if len(offs) != 12 {
				t.Fatalf("%d frames in the journal, want 12", len(offs))
			}
			if err := os.WriteFile(journalPath(path), tc.damage(b, offs), 0o600); err != nil {
				t.Fatal(err)
			}
			s, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			st := s.AppendStatus()
			if !strings.HasPrefix(st, string(events.CodeChainBroken)) || !strings.Contains(st, tc.says) || !strings.Contains(st, journalPath(path)) || !strings.Contains(st, "--repair-journal") {
				t.Fatalf("append status: %q", st)
			}
			if _, err := s.Append(context.Background(), []events.Event{ev(testIDs.New(), 1)}); err == nil {
				t.Fatal("an append was taken beside a damaged journal: it would reuse the lost seqs")
			}
			if rep, err := s.Verify(); err != nil || rep.Healthy() {
				t.Fatalf("verify says healthy: %s %v", rep, err)
			}
			// What is readable before the damage is there to read.
			if missing, _ := s.Missing(acked[:3*tc.readable]); len(missing) != 0 {
				t.Fatalf("%d events before the damage are missing", len(missing))
			}
			s.Close()
			if _, err := os.Stat(journalPath(path)); err != nil {
				t.Fatalf("the damaged journal is gone after an open: %v", err)
			}
			// A read-only open says the same.
			ro, err := Open(path, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if st := ro.AppendStatus(); !strings.Contains(st, tc.says) {
				t.Fatalf("read-only: %q", st)
			}
			ro.Close()

			rep, err := RepairJournal(path, time.Unix(1e9, 0))
			if err != nil || rep == nil {
				t.Fatalf("repair: %+v %v", rep, err)
			}
			if rep.Applied != uint64(3*tc.readable) || rep.Damage == nil {
				t.Fatalf("repair applied up to seq %d (%v), want %d", rep.Applied, rep.Damage, 3*tc.readable)
			}
			if _, err := os.Stat(rep.Kept); err != nil {
				t.Fatalf("the damaged journal is not kept: %v", err)
			}
			s, err = Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if st := s.AppendStatus(); st != "" {
				t.Fatalf("after the repair: %q", st)
			}
			if missing, _ := s.Missing(acked[:3*tc.readable]); len(missing) != 0 {
				t.Fatalf("%d events before the damage are missing after the repair", len(missing))
			}
			if seqs, err := s.Append(context.Background(), []events.Event{ev(testIDs.New(), 99)}); err != nil || seqs[0] != rep.Applied+1 {
				t.Fatalf("append after the repair: %v %v", seqs, err)
			}
			if rep, err := s.Verify(); err != nil || !rep.Healthy() {
				t.Fatalf("verify after the repair: %s %v", rep, err)
			}
			if again, err := RepairJournal(filepath.Join(t.TempDir(), "fresh.db"), time.Now()); again != nil || err != nil {
				t.Fatalf("a repair of a sound journal: %+v %v", again, err)
			}
		})
	}
}

// A journal made before issue 47 (256 KiB preallocated, not 4 MiB) holding
// acknowledged frames is read and applied, not taken for one cut short,
// and the open extends it; one byte shorter it is cut short.
func TestLegacyJournalIsRead(t *testing.T) {
	for _, tc := range []struct {
		size    int
		damaged bool
	}{{legacyPrealloc, false}, {legacyPrealloc - 1, true}} {
		path := filepath.Join(t.TempDir(), "events.db")
		acked := appendHeld(t, path, 6)
		if err := os.Truncate(journalPath(path), int64(tc.size)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		st := s.AppendStatus()
		if damaged := strings.Contains(st, "cut short"); damaged != tc.damaged {
			t.Fatalf("a %d-byte journal: append status %q, want cut short: %v", tc.size, st, tc.damaged)
		}
		if missing, _ := s.Missing(acked); !tc.damaged && len(missing) != 0 {
			t.Fatalf("%d acknowledged events of the legacy journal are missing", len(missing))
		}
		s.Close()
		if fi, err := os.Stat(journalPath(path)); err != nil || !tc.damaged && fi.Size() < journalPrealloc {
			t.Fatalf("the journal after the open: %v, %v (want %d bytes)", fi.Size(), err, journalPrealloc)
		}
	}
}
