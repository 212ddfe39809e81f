package store

import (
	"context"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Archiving twice makes two linked, signed segments and leaves a store
// that continues them; a changed or missing segment is named.
func TestArchiveSegments(t *testing.T) {
	s := openTest(t)
	_, key, _ := ed25519.GenerateKey(nil)
	req := testIDs.New()
	var evs []events.Event
	for i := range 300 {
		evs = append(evs, ev(req, i))
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "archive")
	var steps []string
	if _, err := s.ArchiveTo(dir, 100, key, time.Now(), func(st string) { steps = append(steps, st) }); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ArchiveTo(dir, 250, key, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	if len(steps) != 3 {
		t.Fatalf("steps %v", steps)
	}
	pub := key.Public().(ed25519.PublicKey)
	rep, err := s.VerifyArchive(dir, pub)
	if err != nil || !rep.OK() || rep.Segments != 2 || rep.Events != 250 || rep.Last != 250 {
		t.Fatalf("archive: %+v %v", rep, err)
	}
	if r, _ := s.Verify(); !r.OK() || r.Anchor != 250 || r.Events != 50 {
		t.Fatalf("store: %+v", r)
	}
	if _, err := s.ArchiveTo(dir, 300, key, time.Now(), nil); err == nil {
		t.Fatal("archived the head")
	}
	// Another key's checkpoints are refused.
	other, _, _ := ed25519.GenerateKey(nil)
	if rep, _ := s.VerifyArchive(dir, other); rep.OK() {
		t.Fatal("a foreign key verified the archive")
	}
	m, _ := ReadManifest(dir)
	second := filepath.Join(dir, m.Segments[1].File)
	b, _ := os.ReadFile(second)
	b[len(b)/2] ^= 0xff
	os.WriteFile(second, b, 0o600)
	if rep, _ := s.VerifyArchive(dir, pub); rep.OK() || rep.FirstBad != 101 {
		t.Fatalf("a tampered segment: %+v", rep)
	}
	os.Remove(second)
	if rep, _ := s.VerifyArchive(dir, pub); rep.OK() {
		t.Fatalf("a missing segment: %+v", rep)
	}
}
