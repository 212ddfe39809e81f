package main

import (
	"context"
	"path/filepath"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// tbStore is tracebridge's own log: bbolt, one group-commit writer, the hash
// chain, the id, request and session indexes.
type tbStore struct{ st *store.Store }

func openTracebridge(dir string, _ bool) (peer, error) {
	st, err := store.Open(filepath.Join(dir, "events.db"), store.Options{MaxBatch: 8192})
	if err != nil {
		return nil, err
	}
	return &tbStore{st}, nil
}

func (s *tbStore) Append(ctx context.Context, evs []events.Event) error {
	_, err := s.st.Append(ctx, evs)
	return err
}

func (s *tbStore) Load(evs []events.Event) error {
	_, err := s.st.Append(context.Background(), evs)
	return err
}

func (s *tbStore) Request(req events.ID) (int, error) {
	evs, err := s.st.ByRequest(req)
	return len(evs), err
}

func (s *tbStore) Scan() (int, error) {
	n := 0
	var e events.Event
	err := s.st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
		n++
		return true, events.DecodeInto(&e, rec)
	})
	return n, err
}

func (s *tbStore) Close() error { return s.st.Close() }
