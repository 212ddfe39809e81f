//go:build unix

package store

import (
	"context"
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A3: a FIFO (or any non-regular file) named like the manifest or a
// segment is an error at once, for verify and replay alike, never a wait.
func TestArchiveFIFOIsAnError(t *testing.T) {
	s := openTest(t)
	_, key, _ := ed25519.GenerateKey(nil)
	pub := key.Public().(ed25519.PublicKey)
	req := testIDs.New()
	var evs []events.Event
	for i := range 20 {
		evs = append(evs, ev(req, i))
	}
	if _, err := s.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "archive")
	if _, err := s.ArchiveTo(dir, 10, key, time.Now(), nil); err != nil {
		t.Fatal(err)
	}
	m, _ := ReadManifest(dir)
	b, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	for _, name := range []string{ManifestFile, m.Segments[0].File} {
		fifoDir := t.TempDir()
		if name != ManifestFile {
			os.WriteFile(filepath.Join(fifoDir, ManifestFile), b, 0o600)
		}
		if err := syscall.Mkfifo(filepath.Join(fifoDir, name), 0o600); err != nil {
			t.Fatal(err)
		}
		done := make(chan string, 2)
		go func() { _, err := ArchivedRequest(fifoDir, req, pub); done <- fmt.Sprint(err) }()
		go func() {
			rep, err := s.VerifyArchive(fifoDir, pub)
			done <- fmt.Sprint(err, rep.Problem)
		}()
		for range 2 {
			select {
			case got := <-done:
				if !strings.Contains(got, "not a regular file") {
					t.Fatalf("a FIFO as %s: %s", name, got)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("a FIFO as %s blocked the read", name)
			}
		}
	}
}
