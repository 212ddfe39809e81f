//go:build linux

package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store/powercut"
)

// TestPowerCutBetweenJournalAndApply cuts the power while acknowledged
// frames are in the journal and not in bbolt, with a frame half written
// after them (a torn tail): on every image — only what was synced, a
// random part of the rest, all of it — every acknowledged event is there
// after the open, and the log verifies.
func TestPowerCutBetweenJournalAndApply(t *testing.T) {
	// The power-cut file system is served by this process, and bbolt maps
	// its file: a goroutine faulting on that mapping waits for the FUSE
	// server, which cannot run while a garbage collection stops the world
	// for the faulting thread — a deadlock seen under -race and load. No
	// collection runs while the mount is in use.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	backing, mnt := filepath.Join(t.TempDir(), "backing"), filepath.Join(t.TempDir(), "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	fs, err := powercut.Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := fs.Unmount(); err != nil {
			t.Error(err)
		}
	}()
	path := filepath.Join(mnt, "events.db")
	ctx := context.Background()

	// Some events applied the usual way first, so bbolt holds a tail of
	// its own.
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var acked []events.ID
	for i := range 4 {
		e := ev(testIDs.New(), i)
		if _, err := s.Append(ctx, []events.Event{e}); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, e.ID)
	}
	s.Close()

	s, err = Open(path, Options{holdApply: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close() // before the unmount, or it hangs on a busy mount
	for i := range 6 {
		req := testIDs.New()
		p := strings.Repeat(fmt.Sprintf("payload %d ", i), 500)
		if err := s.PutPayloads(ctx, []string{p}); err != nil {
			t.Fatal(err)
		}
		batch := []events.Event{ev(req, 10*i), ev(req, 10*i+1)}
		batch[1].Attrs.Set("answer", events.PayloadRef(p))
		if _, err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
		acked = append(acked, batch[0].ID, batch[1].ID)
	}
	// A frame of 40 KiB written and not synced: the crash came during it.
	head, hash := s.Head()
	torn := &frame{first: head + 1, prev: hash}
	for i := range 40 {
		e := ev(testIDs.New(), 1000+i)
		e.Seq, e.Prev = head+1+uint64(i), hash
		e.Attrs.Set("pad", strings.Repeat("t", 900))
		rec := events.AppendBody(nil, &e)
		e.Hash = events.ChainHash(hash, rec)
		torn.recs = append(torn.recs, append(append(rec, e.Prev[:]...), e.Hash[:]...))
		torn.flags = append(torn.flags, 0)
		hash = e.Hash
	}
	if _, err := s.j.f.WriteAt(encodeFrame(nil, s.j.epoch, torn), s.j.off); err != nil {
		t.Fatal(err)
	}

	rng := rand.New(rand.NewPCG(7, 11))
	for _, keep := range []float64{0, 0.25, 0.5, 0.75, 1} {
		img := filepath.Join(t.TempDir(), "image")
		if err := fs.Cut(img, powercut.Tear{Keep: keep}, rng); err != nil {
			t.Fatal(err)
		}
		if applied, _, err := bboltHead(filepath.Join(img, "events.db")); err != nil || applied != 4 {
			t.Fatalf("keep %.2f: bbolt in the image holds seq %d (%v), want 4: the cut is not between the journal and the apply", keep, applied, err)
		}
		pristine := filepath.Join(t.TempDir(), "image") // for the damaged copies below
		if err := os.CopyFS(pristine, os.DirFS(img)); err != nil {
			t.Fatal(err)
		}
		got, err := Open(filepath.Join(img, "events.db"), Options{})
		if err != nil {
			t.Fatalf("keep %.2f: open the image: %v", keep, err)
		}
		missing, err := got.Missing(acked)
		rep, verr := got.Verify()
		stored, _ := got.Head()
		got.Close()
		if err != nil || len(missing) != 0 {
			t.Fatalf("keep %.2f: %d of %d acknowledged events lost (%v)", keep, len(missing), len(acked), err)
		}
		if verr != nil || !rep.OK() {
			t.Fatalf("keep %.2f: verify: %s %v", keep, rep, verr)
		}
		if stored != head && stored != head+40 {
			t.Fatalf("keep %.2f: head %d: the torn frame was applied in part", keep, stored)
		}
		t.Logf("keep %.2f: %d acknowledged events there, head %d (the unacknowledged frame %s)", keep, len(acked), stored,
			map[bool]string{true: "survived whole", false: "was dropped"}[stored == head+40])

		// The same image with the journal damaged before its last
		// acknowledged frames (promise 19): named, never dropped silently.
		for _, d := range []struct {
			name, says string
			damage     func(b []byte, offs []int) []byte
		}{
			{"a flipped bit", "damaged at offset", func(b []byte, offs []int) []byte { b[offs[3]+60] ^= 0x08; return b }},
			{"cut short", "cut short", func(b []byte, offs []int) []byte { return b[:offs[5]] }},
		} {
			dmg := filepath.Join(t.TempDir(), "image")
			if err := os.CopyFS(dmg, os.DirFS(pristine)); err != nil {
				t.Fatal(err)
			}
			jp := journalPath(filepath.Join(dmg, "events.db"))
			b, err := os.ReadFile(jp)
			if err != nil {
				t.Fatal(err)
			}
			offs := frameOffsets(t, b)
			if len(offs) < 12 {
				t.Fatalf("keep %.2f: %d frames in the journal, want 12 or more", keep, len(offs))
			}
			if err := os.WriteFile(jp, d.damage(b, offs), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := Open(filepath.Join(dmg, "events.db"), Options{})
			if err != nil {
				t.Fatalf("keep %.2f, %s: open: %v", keep, d.name, err)
			}
			rep, _ := got.Verify()
			got.Close()
			if rep.Healthy() || !strings.Contains(rep.Appends, d.says) {
				t.Fatalf("keep %.2f, %s: the damage is not named: %s", keep, d.name, rep)
			}
		}
	}
}
