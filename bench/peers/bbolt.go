package main

import (
	"context"
	"encoding/binary"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// boltES is a plain bbolt event store in the layout of
// hallgren/eventsourcing's bbolt store (a bucket per aggregate — here a
// request — keyed by its version, and a global-order bucket holding each
// event again), one read-write transaction per request: what a Go
// developer gets from an event-sourcing library over bbolt. That module
// (github.com/hallgren/eventsourcing/eventstore/bbolt) is not served by the
// Go module proxy these machines reach, so its layout is written out here;
// the values are tracebridge's record encoding, not its JSON, to compare the
// storage rather than the codec.
type boltES struct{ db *bolt.DB }

var globalOrder = []byte("global_event_order")

func openBolt(dir string, _ bool) (peer, error) {
	db, err := bolt.Open(filepath.Join(dir, "es.db"), 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(globalOrder)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &boltES{db}, nil
}

func itob(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func (s *boltES) save(tx *bolt.Tx, evs []events.Event) error {
	global := tx.Bucket(globalOrder)
	for i := range evs {
		e := &evs[i]
		agg, err := tx.CreateBucketIfNotExists(e.RequestID[:])
		if err != nil {
			return err
		}
		v, err := agg.NextSequence()
		if err != nil {
			return err
		}
		g, err := global.NextSequence()
		if err != nil {
			return err
		}
		rec := events.Encode(e)
		if err := agg.Put(itob(v), rec); err != nil {
			return err
		}
		if err := global.Put(itob(g), rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *boltES) Append(_ context.Context, evs []events.Event) error {
	return s.db.Update(func(tx *bolt.Tx) error { return s.save(tx, evs) })
}

func (s *boltES) Load(evs []events.Event) error { return s.Append(context.Background(), evs) }

func (s *boltES) Request(req events.ID) (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(req[:])
		if b == nil {
			return nil
		}
		var e events.Event
		return b.ForEach(func(_, v []byte) error {
			n++
			return events.DecodeInto(&e, v)
		})
	})
	return n, err
}

func (s *boltES) Scan() (int, error) {
	n := 0
	err := s.db.View(func(tx *bolt.Tx) error {
		var e events.Event
		return tx.Bucket(globalOrder).ForEach(func(_, v []byte) error {
			n++
			return events.DecodeInto(&e, v)
		})
	})
	return n, err
}

func (s *boltES) Close() error { return s.db.Close() }
