package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tracebridge/tracebridge/internal/durable"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// View is one projection's key/value space (DESIGN §5: one bucket per
// projection, state and checkpoint in one transaction). Views live in a
// file of their own beside the log (ViewsPath): derived state, rebuilt by
// the projector when missing or stale, whose commits never take the log's
// writer lock, so acknowledgements never wait for a projection.
type View interface {
	Get(k []byte) []byte
	Put(k, v []byte) error
	Delete(k []byte) error
	// ForEach visits every pair in key order; Reverse in reverse key
	// order. fn returning ErrStop ends the walk without an error.
	ForEach(fn func(k, v []byte) error) error
	Reverse(fn func(k, v []byte) error) error
}

// ErrStop ends a View walk early.
var ErrStop = errors.New("stop")

// ViewTx hands out views inside one transaction.
type ViewTx struct {
	tx *bolt.Tx // nil: no views file yet (a read-only store): every view is empty
}

// ViewsPath is the views file of the log at path.
func ViewsPath(path string) string { return path + ".views" }

// openViews opens the views file; read-only, a missing one is nil. A file
// that does not open as a database is derived state: it is removed and
// made again (the projector rebuilds what it held).
func openViews(path string, opts Options) (*bolt.DB, error) {
	if opts.ReadOnly {
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
	}
	bo := &bolt.Options{Timeout: opts.Timeout, ReadOnly: opts.ReadOnly, FreelistType: bolt.FreelistMapType}
	db, err := bolt.Open(path, 0o600, bo)
	if err != nil && !opts.ReadOnly && !errors.Is(err, berrors.ErrTimeout) {
		opts.Logger.Warn("the views file does not open: it is made again and the projections rebuilt", "path", path, "err", err)
		if rerr := os.Remove(path); rerr == nil {
			db, err = bolt.Open(path, 0o600, bo)
		}
	}
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("views %s: %w", path, ErrLocked)
	}
	if err != nil {
		return nil, fmt.Errorf("views %s: %w", path, err)
	}
	db.NoSync = skipFsync
	if !opts.ReadOnly {
		if err := durable.SyncDir(filepath.Dir(path)); err != nil {
			db.Close()
			return nil, err
		}
	}
	return db, nil
}

// View returns the named view. In a read transaction a view that does not
// exist yet is empty.
func (t ViewTx) View(name string) (View, error) {
	key := []byte("view:" + name)
	if t.tx == nil {
		return emptyView{}, nil
	}
	if !t.tx.Writable() {
		if b := t.tx.Bucket(key); b != nil {
			return boltView{b}, nil
		}
		return emptyView{}, nil
	}
	b, err := t.tx.CreateBucketIfNotExists(key)
	if err != nil {
		return nil, err
	}
	return boltView{b}, nil
}

// Drop deletes the named view.
func (t ViewTx) Drop(name string) error {
	if t.tx == nil {
		return berrors.ErrTxNotWritable
	}
	err := t.tx.DeleteBucket([]byte("view:" + name))
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}

// UpdateViews runs fn in one write transaction of the views file, committed
// durably when fn returns nil.
func (s *Store) UpdateViews(fn func(ViewTx) error) error {
	if s.opts.ReadOnly {
		return errors.New("store is open read-only")
	}
	return s.views.Update(func(tx *bolt.Tx) error { return fn(ViewTx{tx}) })
}

// ReadViews runs fn in a read transaction of the views file.
func (s *Store) ReadViews(fn func(ViewTx) error) error {
	if s.views == nil {
		return fn(ViewTx{})
	}
	return s.views.View(func(tx *bolt.Tx) error { return fn(ViewTx{tx}) })
}

// dropLogViews removes the views an older version kept in the log file
// (they live in the views file now, rebuilt from the log).
func dropLogViews(tx *bolt.Tx) error {
	var old [][]byte
	err := tx.ForEach(func(name []byte, _ *bolt.Bucket) error {
		if bytes.HasPrefix(name, []byte("view:")) {
			old = append(old, append([]byte(nil), name...))
		}
		return nil
	})
	for _, name := range old {
		if err == nil {
			err = tx.DeleteBucket(name)
		}
	}
	return err
}

type boltView struct{ b *bolt.Bucket }

func (v boltView) Get(k []byte) []byte     { return v.b.Get(k) }
func (v boltView) Put(k, val []byte) error { return v.b.Put(k, val) }
func (v boltView) Delete(k []byte) error   { return v.b.Delete(k) }

func (v boltView) ForEach(fn func(k, v []byte) error) error {
	return stopped(v.b.ForEach(fn))
}

func (v boltView) Reverse(fn func(k, v []byte) error) error {
	c := v.b.Cursor()
	for k, val := c.Last(); k != nil; k, val = c.Prev() {
		if err := fn(k, val); err != nil {
			return stopped(err)
		}
	}
	return nil
}

func stopped(err error) error {
	if errors.Is(err, ErrStop) {
		return nil
	}
	return err
}

type emptyView struct{}

func (emptyView) Get([]byte) []byte                     { return nil }
func (emptyView) Put(_, _ []byte) error                 { return berrors.ErrTxNotWritable }
func (emptyView) Delete([]byte) error                   { return berrors.ErrTxNotWritable }
func (emptyView) ForEach(func(k, v []byte) error) error { return nil }
func (emptyView) Reverse(func(k, v []byte) error) error { return nil }
