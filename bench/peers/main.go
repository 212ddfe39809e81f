package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

var peers = []peerKind{
	{"tracebridge", "bbolt, group commit, hash chain, id/request/session indexes", openTracebridge},
	{"sqlite-wal", "modernc.org/sqlite, WAL, synchronous=FULL, group commit, UNIQUE id, (req, seq) index", openSQLite},
	{"jetstream", "embedded nats-server file stream, sync always, subject per request, msg-id dedup", openJetStream},
	{"bbolt-es", "bbolt, a bucket per request + global order, one transaction per request", openBolt},
}

func main() {
	n := flag.Int("events", 1_000_000, "events in the store the lookup and scan read")
	ingest := flag.Int("ingest", 3000, "requests of 12 events each in the ingest run")
	writers := flag.Int("writers", 64, "concurrent writers in the ingest run")
	lookups := flag.Int("lookups", 2000, "lookups of one request's 50 events")
	only := flag.String("only", "", "comma-separated peers to run (default all)")
	dir := flag.String("dir", "", "where the stores go (default a temp dir, removed after)")
	flag.Parse()
	if err := run(os.Stdout, *n, *ingest, *writers, *lookups, *only, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

// result is one peer's figures.
type result struct {
	name, note             string
	ingestRate             float64 // events/s
	ackP50, ackP99         time.Duration
	lookupP50, lookupP99   time.Duration
	scanRate               float64 // events/s
	loadTime               time.Duration
	ingestBytes, loadBytes int64
}

func run(out *os.File, n, ingest, writers, lookups int, only, dir string) error {
	if dir == "" {
		d, err := os.MkdirTemp("", "tb-peers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	var results []result
	for _, pk := range peers {
		if only != "" && !slices.Contains(strings.Split(only, ","), pk.name) {
			continue
		}
		fmt.Fprintf(os.Stderr, "peers: %s ...\n", pk.name)
		r, err := measure(pk, dir, n, ingest, writers, lookups)
		if err != nil {
			return fmt.Errorf("%s: %w", pk.name, err)
		}
		results = append(results, r)
	}
	report(out, results, n, ingest, writers)
	return nil
}

func measure(pk peerKind, dir string, n, ingest, writers, lookups int) (result, error) {
	r := result{name: pk.name, note: pk.note}
	ids := events.NewIDSource(nil, nil)

	// Ingest: writers concurrent requests of 12 events, each acknowledged
	// once durable, into an empty store.
	idir := dir + "/" + pk.name + "-ingest"
	os.MkdirAll(idir, 0o700)
	p, err := pk.open(idir, false)
	if err != nil {
		return r, err
	}
	var next atomic.Int64
	var mu sync.Mutex
	var acks []time.Duration
	var firstErr error
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Go(func() {
			var mine []time.Duration
			for next.Add(1) <= int64(ingest) {
				evs := request(ids, ids.New(), ids.New(), 12, time.Now())
				t0 := time.Now()
				if err := p.Append(context.Background(), evs); err != nil {
					mu.Lock()
					firstErr = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			acks = append(acks, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	took := time.Since(start)
	p.Close()
	if firstErr != nil {
		return r, firstErr
	}
	r.ingestRate = float64(ingest*12) / took.Seconds()
	r.ackP50, r.ackP99 = pct(acks, 0.50), pct(acks, 0.99)
	r.ingestBytes = du(idir)
	os.RemoveAll(idir)

	// A store of n events in requests of 50, 64 requests interleaved.
	ldir := dir + "/" + pk.name + "-read"
	os.MkdirAll(ldir, 0o700)
	if p, err = pk.open(ldir, true); err != nil {
		return r, err
	}
	defer func() { p.Close(); os.RemoveAll(ldir) }()
	var reqs []events.ID
	t0 := time.Now()
	base := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for len(reqs)*50 < n {
		sess := ids.New()
		group := make([][]events.Event, 64)
		for i := range group {
			req := ids.New()
			reqs = append(reqs, req)
			group[i] = request(ids, req, sess, 50, base.Add(time.Duration(len(reqs))*time.Millisecond))
		}
		var batch []events.Event
		for step := 0; step < 50; step++ {
			for i := range group {
				batch = append(batch, group[i][step])
			}
		}
		if err := p.Load(batch); err != nil {
			return r, err
		}
	}
	r.loadTime = time.Since(t0)
	r.loadBytes = du(ldir)
	total := len(reqs) * 50

	rng := rand.New(rand.NewPCG(1, 2))
	var lat []time.Duration
	for i := 0; i < lookups; i++ {
		req := reqs[rng.IntN(len(reqs))]
		t0 := time.Now()
		got, err := p.Request(req)
		lat = append(lat, time.Since(t0))
		if err != nil {
			return r, err
		}
		if got != 50 {
			return r, fmt.Errorf("lookup of %s: %d events, want 50", req, got)
		}
	}
	r.lookupP50, r.lookupP99 = pct(lat, 0.50), pct(lat, 0.99)

	t0 = time.Now()
	got, err := p.Scan()
	if err != nil {
		return r, err
	}
	if got != total {
		return r, fmt.Errorf("scan: %d events, want %d", got, total)
	}
	r.scanRate = float64(got) / time.Since(t0).Seconds()
	return r, nil
}

// request is one request's events: a tool call's chain, with the attributes
// a bridge records.
func request(ids *events.IDSource, req, sess events.ID, n int, at time.Time) []events.Event {
	kinds := []string{events.KindMCPRequestReceived, events.KindExecutorStarted, events.KindPolicyDecided, events.KindToolStarted,
		events.KindPipeRequestSent, events.KindHostReceived, events.KindHostDispatched, events.KindHostResponseSent,
		events.KindPipeResponseReceived, events.KindToolCompleted, events.KindExecutorAudit, events.KindMCPResponseSent}
	evs := make([]events.Event, n)
	for i := range evs {
		kind := kinds[i%len(kinds)]
		info, _ := events.Lookup(kind)
		evs[i] = events.Event{ID: ids.New(), Time: at.Add(time.Duration(i) * time.Microsecond), Kind: kind,
			Boundary: info.Boundary, From: info.From, To: info.To, RequestID: req, SessionID: sess, Outcome: events.OK,
			DurationMs: 0.1, Attrs: events.A("tool", "get_selection", "args", `{"pattern":"foo.*bar","max":50}`)}
	}
	return evs
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

// du is the bytes the files under dir take on disk.
func du(dir string) int64 {
	var n int64
	filepathWalk(dir, func(size int64) { n += size })
	return n
}

func report(out *os.File, rs []result, n, ingest, writers int) {
	fmt.Fprintf(out, "One run, this machine. Ingest: %d writers × %d requests of 12 events, each acknowledged when durable. Lookup: one request's 50 events from %d. Scan: all %d, decoded.\n\n", writers, ingest, n, n)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "store\tingest ev/s\tack p50\tack p99\tlookup p50\tlookup p99\tscan ev/s\tbytes/event\t")
	for _, r := range rs {
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t%s\t%s\t%.0f\t%.0f\t\n", r.name, r.ingestRate, ms(r.ackP50), ms(r.ackP99),
			us(r.lookupP50), us(r.lookupP99), r.scanRate, float64(r.loadBytes)/float64(n))
	}
	tw.Flush()
	if len(rs) > 0 && rs[0].name == "tracebridge" {
		tb := rs[0]
		fmt.Fprintln(out, "\nRatios, tracebridge ÷ peer (above 1: tracebridge is faster or smaller):")
		tw = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "peer\tingest\tack p50\tlookup p50\tscan\tbytes/event\t")
		for _, r := range rs[1:] {
			fmt.Fprintf(tw, "%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", r.name, tb.ingestRate/r.ingestRate, float64(r.ackP50)/float64(tb.ackP50),
				float64(r.lookupP50)/float64(tb.lookupP50), tb.scanRate/r.scanRate, float64(r.loadBytes)/float64(tb.loadBytes))
		}
		tw.Flush()
	}
	fmt.Fprintln(out)
	for _, r := range rs {
		fmt.Fprintf(out, "%s: %s\n", r.name, r.note)
	}
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
func us(d time.Duration) string { return fmt.Sprintf("%.0fµs", float64(d)/1e3) }
