package store

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tracebridge/tracebridge/events"
)

// BenchmarkFsyncProbe measures one fdatasync of a 4 KiB write on this
// machine's disk: the floor under any durable commit.
func BenchmarkFsyncProbe(b *testing.B) {
	f, err := os.CreateTemp(b.TempDir(), "probe")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	page := bytes.Repeat([]byte{1}, 4096)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		if _, err := f.WriteAt(page, int64(i%256)*4096); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		if err := fdatasync(f); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, "fsync", lat)
}

// BenchmarkRawBolt is the raw bbolt limit: 1000 puts of 300-byte values per
// durable transaction, sequential keys, no encoding, no index.
func BenchmarkRawBolt(b *testing.B) {
	db, err := bolt.Open(filepath.Join(b.TempDir(), "raw.db"), 0o600, &bolt.Options{FreelistType: bolt.FreelistMapType})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	val := bytes.Repeat([]byte{7}, 300)
	var seq uint64
	b.ResetTimer()
	for b.Loop() {
		err := db.Update(func(tx *bolt.Tx) error {
			bk, err := tx.CreateBucketIfNotExists([]byte("e"))
			if err != nil {
				return err
			}
			bk.FillPercent = 0.9
			for i := 0; i < 1000; i++ {
				seq++
				if err := bk.Put(binary.BigEndian.AppendUint64(nil, seq), val); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seq)/b.Elapsed().Seconds(), "events/s")
}

// fixtures caches stores of n events (requests of 50 events, 64 at a time
// interleaved, as concurrent requests are) across benchmark runs.
var fixtures sync.Map // int → *fixture

type fixture struct {
	once sync.Once
	st   *Store
	reqs []events.ID
	err  error
}

func benchStore(b *testing.B, n int) *fixture {
	v, _ := fixtures.LoadOrStore(n, &fixture{})
	fx := v.(*fixture)
	fx.once.Do(func() {
		dir, err := os.MkdirTemp("", "tb-bench-")
		if err != nil {
			fx.err = err
			return
		}
		fx.st, fx.err = Open(filepath.Join(dir, "events.db"), Options{MaxBatch: 8192})
		if fx.err != nil {
			return
		}
		os.RemoveAll(dir) // the open file lives until the process ends; nothing is left behind
		ids := events.NewIDSource(nil, nil)
		const per, inflight = 50, 64
		for len(fx.reqs)*per < n {
			group := make([]events.ID, inflight)
			for i := range group {
				group[i] = ids.New()
			}
			fx.reqs = append(fx.reqs, group...)
			var batch []events.Event
			for step := 0; step < per; step++ {
				for _, req := range group {
					e := ev(req, step)
					e.ID = ids.New()
					e.Attrs.Set("pad", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx")
					batch = append(batch, e)
				}
			}
			if _, err := fx.st.Append(context.Background(), batch); err != nil {
				fx.err = err
				return
			}
		}
	})
	if fx.err != nil {
		b.Fatal(fx.err)
	}
	return fx
}

var sizes = []int{10_000, 100_000, 1_000_000}

// BenchmarkReadRequest reads one request's 50 events (decoded) by request id,
// beside a bare bbolt cursor over the same keys (no decode): the request
// index covers the records, so that is bbolt's floor for keys clustered by
// request id.
func BenchmarkReadRequest(b *testing.B) {
	for _, n := range sizes {
		fx := benchStore(b, n)
		rng := rand.New(rand.NewPCG(1, 2))
		b.Run(fmt.Sprintf("events=%d/store", n), func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				req := fx.reqs[rng.IntN(len(fx.reqs))]
				t0 := time.Now()
				evs, err := fx.st.ByRequest(req)
				lat = append(lat, time.Since(t0))
				if err != nil || len(evs) != 50 {
					b.Fatalf("%d events, %v", len(evs), err)
				}
			}
			reportLatency(b, "read", lat)
		})
		b.Run(fmt.Sprintf("events=%d/bare-cursor", n), func(b *testing.B) {
			var lat []time.Duration
			var sink int
			for b.Loop() {
				req := fx.reqs[rng.IntN(len(fx.reqs))]
				t0 := time.Now()
				fx.st.db.View(func(tx *bolt.Tx) error {
					c := tx.Bucket(bucketByRequest).Cursor()
					for k, v := c.Seek(req[:]); k != nil && bytes.HasPrefix(k, req[:]); k, v = c.Next() {
						sink += len(v)
					}
					return nil
				})
				lat = append(lat, time.Since(t0))
			}
			reportLatency(b, "read", lat)
			_ = sink
		})
	}
}

// BenchmarkScanDecode reads and decodes the whole 1M-event log: the ceiling
// of a projection rebuild.
func BenchmarkScanDecode(b *testing.B) {
	fx := benchStore(b, 1_000_000)
	var n int
	for b.Loop() {
		err := fx.st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
			_, err := events.Decode(rec)
			n++
			return true, err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVerify checks the chain of the 1M-event log (what the hub does in
// the background at start).
func BenchmarkVerify(b *testing.B) {
	fx := benchStore(b, 1_000_000)
	var n uint64
	for b.Loop() {
		rep, err := fx.st.Verify()
		if err != nil || !rep.OK() {
			b.Fatal(rep, err)
		}
		n += rep.Events
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "events/s")
}

// reportLatency reports p50 and p99 of lat in microseconds.
func reportLatency(b *testing.B, name string, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	p := func(q float64) float64 { return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))]) / 1e3 }
	b.ReportMetric(p(0.50), name+"-p50-µs")
	b.ReportMetric(p(0.99), name+"-p99-µs")
	b.ReportMetric(0, "ns/op") // latency percentiles say it better
}

// BenchmarkArchiveHalf archives the older half of a 1M-event store: events/s
// (segment written and synced, then the drop committed), the segment's
// bytes per event, and the store file's size before and after (bbolt keeps
// its file size: the freed pages are reused by later appends).
func BenchmarkArchiveHalf(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		path := filepath.Join(dir, "events.db")
		s, err := Open(path, Options{MaxBatch: 8192})
		if err != nil {
			b.Fatal(err)
		}
		reqs := []events.ID{testIDs.New()}
		var batch []events.Event
		for i := range benchArchiveEvents {
			if i%50 == 0 {
				reqs[0] = testIDs.New()
			}
			batch = append(batch, ev(reqs[0], i))
			if len(batch) == 8192 {
				if _, err := s.Append(context.Background(), batch); err != nil {
					b.Fatal(err)
				}
				batch = batch[:0]
			}
		}
		if _, err := s.Append(context.Background(), batch); err != nil {
			b.Fatal(err)
		}
		before, _ := os.Stat(path)
		head, _ := s.Head()
		_, key, _ := ed25519.GenerateKey(nil)
		b.StartTimer()
		t0 := time.Now()
		seg, err := s.ArchiveTo(filepath.Join(dir, "archive"), head/2, key, time.Now(), nil)
		took := time.Since(t0)
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		after, _ := os.Stat(path)
		segInfo, _ := os.Stat(filepath.Join(dir, "archive", seg.File))
		b.ReportMetric(float64(seg.Last)/took.Seconds(), "events/s")
		b.ReportMetric(float64(segInfo.Size())/float64(seg.Last), "segment-B/event")
		b.ReportMetric(float64(before.Size())/(1<<20), "db-MiB-before")
		b.ReportMetric(float64(after.Size())/(1<<20), "db-MiB-after")
		b.ReportMetric(0, "ns/op")
		s.Close()
		b.StartTimer()
	}
}

// benchArchiveEvents is BenchmarkArchiveHalf's store size.
var benchArchiveEvents = func() int {
	if n, err := strconv.Atoi(os.Getenv("TB_BENCH_ARCHIVE_EVENTS")); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}()
