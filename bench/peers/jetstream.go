package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
)

// jsStore is an embedded NATS server's JetStream file stream with
// sync_interval always (every write fsynced before its ack): one subject per
// request (ev.<request id>), Nats-Msg-Id = event id for deduplication. A
// request is acknowledged once the stream acked all of its messages.
type jsStore struct {
	ns     *server.Server
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
}

func openJetStream(dir string, bulk bool) (peer, error) {
	ns, err := server.NewServer(&server.Options{
		JetStream: true, StoreDir: dir, SyncAlways: !bulk,
		DontListen: true, NoLog: true, NoSigs: true,
		JetStreamMaxMemory: 256 << 20, JetStreamMaxStore: 64 << 30,
	})
	if err != nil {
		return nil, err
	}
	ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		return nil, errors.New("jetstream: the embedded server did not start")
	}
	nc, err := nats.Connect("", nats.InProcessServer(ns))
	if err != nil {
		ns.Shutdown()
		return nil, err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(16384))
	if err != nil {
		return nil, err
	}
	stream, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: "EV", Subjects: []string{"ev.>"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute,
	})
	if err != nil {
		return nil, err
	}
	return &jsStore{ns: ns, nc: nc, js: js, stream: stream}, nil
}

func (s *jsStore) publish(evs []events.Event) ([]jetstream.PubAckFuture, error) {
	acks := make([]jetstream.PubAckFuture, 0, len(evs))
	for i := range evs {
		e := &evs[i]
		m := nats.NewMsg("ev." + e.RequestID.String())
		m.Header.Set(jetstream.MsgIDHeader, e.ID.String())
		m.Data = events.Encode(e)
		f, err := s.js.PublishMsgAsync(m)
		if err != nil {
			return nil, err
		}
		acks = append(acks, f)
	}
	return acks, nil
}

func wait(ctx context.Context, acks []jetstream.PubAckFuture) error {
	for _, f := range acks {
		select {
		case <-f.Ok():
		case err := <-f.Err():
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func (s *jsStore) Append(ctx context.Context, evs []events.Event) error {
	acks, err := s.publish(evs)
	if err != nil {
		return err
	}
	return wait(ctx, acks)
}

func (s *jsStore) Load(evs []events.Event) error {
	acks, err := s.publish(evs)
	if err != nil {
		return err
	}
	return wait(context.Background(), acks)
}

// read decodes the messages an ephemeral consumer over filter delivers
// (want of them), then deletes the consumer.
func (s *jsStore) read(filter string, want uint64) (int, error) {
	ctx := context.Background()
	c, err := s.stream.CreateConsumer(ctx, jetstream.ConsumerConfig{FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy, InactiveThreshold: time.Minute})
	if err != nil {
		return 0, err
	}
	defer s.stream.DeleteConsumer(ctx, c.CachedInfo().Name)
	n := 0
	var e events.Event
	for uint64(n) < want {
		batch, err := c.FetchNoWait(1024)
		if err != nil {
			return n, err
		}
		got := 0
		for m := range batch.Messages() {
			if err := events.DecodeInto(&e, m.Data()); err != nil {
				return n, err
			}
			n++
			got++
		}
		if err := batch.Error(); err != nil {
			return n, err
		}
		if got == 0 {
			time.Sleep(100 * time.Microsecond)
		}
	}
	return n, nil
}

func (s *jsStore) Request(req events.ID) (int, error) {
	info, err := s.stream.Info(context.Background(), jetstream.WithSubjectFilter("ev."+req.String()))
	if err != nil {
		return 0, err
	}
	want := info.State.Subjects["ev."+req.String()]
	if want == 0 {
		return 0, fmt.Errorf("jetstream: no messages for %s", req)
	}
	return s.read("ev."+req.String(), want)
}

func (s *jsStore) Scan() (int, error) {
	info, err := s.stream.Info(context.Background())
	if err != nil {
		return 0, err
	}
	return s.read("ev.>", info.State.Msgs)
}

func (s *jsStore) Close() error {
	s.nc.Close()
	s.ns.Shutdown()
	s.ns.WaitForShutdown()
	return nil
}
