package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// fill makes a closed store of n events and returns its path.
func fill(t *testing.T, n int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := testIDs.New()
	var batch []events.Event
	for i := 1; i <= n; i++ {
		batch = append(batch, ev(req, i))
	}
	if _, err := s.Append(context.Background(), batch); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func mutate(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

func verifyPath(t *testing.T, path string, cps ...Checkpoint) Report {
	t.Helper()
	s, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rep, err := s.Verify(cps...)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func TestVerifyNamesTheFirstBadSeq(t *testing.T) {
	tests := []struct {
		name     string
		damage   func(t *testing.T, path string)
		firstBad uint64
		problem  string
	}{
		{"intact", func(*testing.T, string) {}, 0, ""},
		{"flipped byte in the file", func(t *testing.T, path string) {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			// Both copies: the log's record and the request index's.
			if n := bytes.Count(b, []byte("value-000007")); n != 2 {
				t.Fatalf("marker of seq 7 found %d times in the file, want 2 (the log and the request index)", n)
			}
			for i := bytes.Index(b, []byte("value-000007")); i >= 0; i = bytes.Index(b, []byte("value-000007")) {
				b[i+len("value-")] ^= 0x01
			}
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
		}, 7, "edited"},
		{"edited copy in the request index", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketByRequest)
				c := b.Cursor()
				for k, v := c.First(); k != nil; k, v = c.Next() {
					if binary.BigEndian.Uint64(k[16:]) == 7 {
						return b.Put(bytes.Clone(k), bytes.ReplaceAll(bytes.Clone(v), []byte("value-000007"), []byte("value-999997")))
					}
				}
				return errors.New("seq 7 is not in the request index")
			})
		}, 7, "index was edited"},
		{"deleted event", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Delete(seqKey(4)) })
		}, 4, "missing"},
		{"swapped events", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				v5, v6 := bytes.Clone(b.Get(seqKey(5))), bytes.Clone(b.Get(seqKey(6)))
				return errors.Join(b.Put(seqKey(5), v6), b.Put(seqKey(6), v5))
			})
		}, 5, "reordered"},
		{"truncated tail", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketEvents)
				return errors.Join(b.Delete(seqKey(10)), b.Delete(seqKey(9)))
			})
		}, 9, "truncated"},
		{"edited meta head", func(t *testing.T, path string) {
			mutate(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket(bucketMeta).Put(keyHead, append(seqKey(12), make([]byte, 32)...))
			})
		}, 11, "truncated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := fill(t, 10)
			tc.damage(t, path)
			rep := verifyPath(t, path)
			if rep.FirstBad != tc.firstBad || !strings.Contains(rep.Problem, tc.problem) {
				t.Fatalf("report %q (first bad %d), want first bad %d mentioning %q", rep.Problem, rep.FirstBad, tc.firstBad, tc.problem)
			}
		})
	}
}

func TestOpenRefusesAppendsPastABrokenTail(t *testing.T) {
	path := fill(t, 5)
	mutate(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketEvents).Delete(seqKey(5)) })
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	_, err = s.Append(context.Background(), []events.Event{ev(testIDs.New(), 1)})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodeChainBroken || !strings.Contains(rej.Msg, "tracebridge verify") {
		t.Fatalf("append past a broken tail: %v", err)
	}
}

func TestCheckpointCatchesRollbackToAnOlderCopy(t *testing.T) {
	dir := t.TempDir()
	key, err := LoadSigningKey(filepath.Join(dir, "keys", "checkpoint.key"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := testIDs.New()
	if _, err := s.Append(context.Background(), []events.Event{ev(req, 1), ev(req, 2)}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// An older copy of the log is of both its files: the journal too.
	old, _ := os.ReadFile(path)
	oldJournal, _ := os.ReadFile(journalPath(path))

	s, _ = Open(path, Options{})
	if _, err := s.Append(context.Background(), []events.Event{ev(req, 3), ev(req, 4)}); err != nil {
		t.Fatal(err)
	}
	cpPath := filepath.Join(dir, "cp.json")
	if err := WriteCheckpoint(cpPath, s.SignCheckpoint(key, time.Now())); err != nil {
		t.Fatal(err)
	}
	s.Close()
	cp, err := ReadCheckpoint(cpPath, key.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	if rep := verifyPath(t, path, cp); !rep.OK() || rep.Checkpoints != 1 {
		t.Fatalf("intact store against its checkpoint: %s", rep)
	}

	if err := os.WriteFile(path, old, 0o600); err != nil { // roll back
		t.Fatal(err)
	}
	if err := os.WriteFile(journalPath(path), oldJournal, 0o600); err != nil {
		t.Fatal(err)
	}
	if rep := verifyPath(t, path); !rep.OK() {
		t.Fatalf("the older copy is self-consistent and should verify alone: %s", rep)
	}
	rep := verifyPath(t, path, cp)
	if rep.OK() || rep.FirstBad != 3 || !strings.Contains(rep.Problem, "rolled back") {
		t.Fatalf("rolled-back store against the checkpoint: %s", rep)
	}
}

func TestCheckpointFileTamperingIsDetected(t *testing.T) {
	dir := t.TempDir()
	key, _ := LoadSigningKey(filepath.Join(dir, "k"))
	other, _ := LoadSigningKey(filepath.Join(dir, "other"))
	s := openTest(t)
	s.Append(context.Background(), []events.Event{ev(testIDs.New(), 1)})
	path := filepath.Join(dir, "cp.json")
	WriteCheckpoint(path, s.SignCheckpoint(key, time.Now()))
	b, _ := os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(b, []byte(`"seq": 1`), []byte(`"seq": 9`), 1), 0o600)
	if _, err := ReadCheckpoint(path, nil); err == nil || !strings.Contains(err.Error(), "edited") {
		t.Fatalf("edited checkpoint: %v", err)
	}
	WriteCheckpoint(path, s.SignCheckpoint(other, time.Now()))
	if _, err := ReadCheckpoint(path, key.Public().(ed25519.PublicKey)); err == nil || !strings.Contains(err.Error(), "another key") {
		t.Fatalf("checkpoint by a foreign key: %v", err)
	}
}
