package store

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
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

// A4: a run read from an archive is shown only when the archive verifies:
// an edited segment (re-compressed, with or without the manifest's SHA-256
// updated to match) or another key's archive yields an error, never the
// edited events.
func TestArchivedRequestVerifiesFirst(t *testing.T) {
	s := openTest(t)
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	req := testIDs.New()
	var evs []events.Event
	for i := range 50 {
		evs = append(evs, ev(req, i))
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "archive")
	if _, err := s.ArchiveTo(dir, 40, key, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	got, err := ArchivedRequest(dir, req, pub)
	if err != nil || len(got) != 40 {
		t.Fatalf("a genuine archive: %d events, %v", len(got), err)
	}
	if _, err := ArchivedRequest(dir, req, func() ed25519.PublicKey { p, _, _ := ed25519.GenerateKey(nil); return p }()); err == nil {
		t.Fatal("an archive signed by another key was shown")
	}
	m, _ := ReadManifest(dir)
	seg := filepath.Join(dir, m.Segments[0].File)
	orig, _ := os.ReadFile(seg)
	zr, _ := gzip.NewReader(bytes.NewReader(orig))
	raw, _ := io.ReadAll(zr)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(bytes.ReplaceAll(raw, []byte("value-000007"), []byte("FORGED-00007")))
	zw.Close()
	os.WriteFile(seg, buf.Bytes(), 0o600)
	if got, err := ArchivedRequest(dir, req, pub); err == nil || len(got) > 0 || !strings.Contains(err.Error(), "SHA-256") {
		t.Fatalf("an edited segment: %d events, %v", len(got), err)
	}
	// The attacker updates the manifest's hash too: the chain says no.
	sum := sha256.Sum256(buf.Bytes())
	m.Segments[0].SHA256 = hex.EncodeToString(sum[:])
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o600)
	if got, err := ArchivedRequest(dir, req, pub); err == nil || len(got) > 0 || !strings.Contains(err.Error(), "hash does not match") {
		t.Fatalf("an edited segment with its manifest: %d events, %v", len(got), err)
	}

}

// A segment whose events refer to payloads carries them in its payload
// file: the archive verifies on its own; a changed or missing payload file,
// or a manifest that no longer lists it, is named.
func TestArchiveCarriesPayloads(t *testing.T) {
	ctx := context.Background()
	s := openTest(t)
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	req := testIDs.New()
	p := strings.Repeat("archived payload ", 500)
	if err := s.PutPayloads(ctx, []string{p}); err != nil {
		t.Fatal(err)
	}
	evs := []events.Event{ev(req, 1), ev(req, 2), ev(req, 3)}
	evs[1].Attrs.Set("answer", events.PayloadRef(p))
	if _, err := s.Append(ctx, evs); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "archive")
	seg, err := s.ArchiveTo(dir, 2, key, time.Now(), nil)
	if err != nil || seg.Payloads == "" {
		t.Fatalf("archive: %+v %v", seg, err)
	}
	if rep, err := s.VerifyArchive(dir, pub); err != nil || !rep.OK() {
		t.Fatalf("archive with payloads: %v %v", rep, err)
	}
	file := filepath.Join(dir, seg.Payloads)
	orig, _ := os.ReadFile(file)
	manifest, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	for _, tc := range []struct {
		name, want string
		harm       func()
	}{
		{"changed", "does not have the SHA-256", func() {
			b := bytes.Clone(orig)
			b[len(b)/2] ^= 1
			os.WriteFile(file, b, 0o600)
		}},
		{"missing", "the payloads of segment", func() { os.Remove(file) }},
		{"unlisted", "which the archive does not hold whole", func() {
			os.WriteFile(filepath.Join(dir, ManifestFile), bytes.Replace(manifest, []byte(`"payloads": "`+seg.Payloads+`"`), []byte(`"payloads": ""`), 1), 0o600)
		}},
	} {
		tc.harm()
		rep, err := s.VerifyArchive(dir, pub)
		if err != nil || rep.OK() || !strings.Contains(rep.Problem, tc.want) {
			t.Errorf("%s payload file: %v %v", tc.name, rep, err)
		}
		os.WriteFile(file, orig, 0o600)
		os.WriteFile(filepath.Join(dir, ManifestFile), manifest, 0o600)
	}
}
