package store

import (
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// The views live in a file of their own: an older version's views in the
// log are dropped at open, an unreadable views file is made again, and a
// read-only store with no views file reads every view empty.
func TestViewsLiveBesideTheLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	put := func(s *Store, v string) {
		t.Helper()
		if err := s.UpdateViews(func(tx ViewTx) error {
			view, err := tx.View("runs")
			if err != nil {
				return err
			}
			return view.Put([]byte("k"), []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	get := func(s *Store) string {
		t.Helper()
		var got string
		if err := s.ReadViews(func(tx ViewTx) error {
			view, err := tx.View("runs")
			got = string(view.Get([]byte("k")))
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	put(s, "one")
	s.Close()
	// An older version's view in the log file itself.
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists([]byte("view:runs"))
		if err == nil {
			err = b.Put([]byte("k"), []byte("old"))
		}
		return err
	})
	db.Close()

	s, err = Open(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := get(s); got != "one" {
		t.Fatalf("the view reads %q, want the views file's", got)
	}
	s.view(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("view:runs")) != nil {
			t.Error("the log still holds an older version's view")
		}
		return nil
	})
	s.Close()

	// An unreadable views file: made again, empty (the projector rebuilds).
	if err := os.WriteFile(ViewsPath(path), []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	if s, err = Open(path, Options{}); err != nil {
		t.Fatalf("a broken views file stopped the log from opening: %v", err)
	}
	if got := get(s); got != "" {
		t.Fatalf("a views file made again reads %q", got)
	}
	put(s, "two")
	s.Close()

	// Read-only, with no views file: empty views, no error.
	os.Remove(ViewsPath(path))
	ro, err := Open(path, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := get(ro); got != "" {
		t.Fatalf("no views file reads %q", got)
	}
	if err := ro.UpdateViews(func(ViewTx) error { return nil }); err == nil {
		t.Fatal("a read-only store wrote views")
	}
}
