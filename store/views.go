package store

import (
	"errors"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// View is one projection's key/value space in the store file (DESIGN §5:
// one bucket per projection, state and checkpoint in one transaction).
// Views are written by the projector in their own transactions, never by
// the append writer, so acknowledgements never wait for a projection.
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
	tx *bolt.Tx
}

// View returns the named view. In a read transaction a view that does not
// exist yet is empty.
func (t ViewTx) View(name string) (View, error) {
	key := []byte("view:" + name)
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
	err := t.tx.DeleteBucket([]byte("view:" + name))
	if errors.Is(err, berrors.ErrBucketNotFound) {
		return nil
	}
	return err
}

// UpdateViews runs fn in one write transaction, committed durably when fn
// returns nil. It waits for the append writer's current commit, if any.
func (s *Store) UpdateViews(fn func(ViewTx) error) error {
	if s.opts.ReadOnly {
		return errors.New("store is open read-only")
	}
	return s.db.Update(func(tx *bolt.Tx) error { return fn(ViewTx{tx}) })
}

// ReadViews runs fn in a read transaction.
func (s *Store) ReadViews(fn func(ViewTx) error) error {
	return s.db.View(func(tx *bolt.Tx) error { return fn(ViewTx{tx}) })
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
