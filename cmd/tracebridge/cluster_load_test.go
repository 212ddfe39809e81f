package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/clustertest"
	"github.com/tracebridge/tracebridge/store"
)

// streamInfo is the stream's last seq and the name of its leader.
func streamInfo(t *testing.T, url string) (last uint64, leader string) {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	end := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		s, err := js.Stream(ctx, hub.DefaultStream)
		if err == nil {
			var info *jetstream.StreamInfo
			if info, err = s.Info(ctx); err == nil && info.Cluster != nil && info.Cluster.Leader != "" {
				cancel()
				return info.State.LastSeq, info.Cluster.Leader
			}
		}
		cancel()
		if time.Now().After(end) {
			t.Fatalf("the stream has no leader: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// collectorState opens a stopped collector's store: its stream position,
// head, and the event ids it holds more than once.
func collectorState(t *testing.T, data string) (src store.Source, head uint64, hash events.Hash, twice int, st *store.Store) {
	t.Helper()
	st = readStore(t, data)
	src, err := st.Source()
	if err != nil {
		t.Fatal(err)
	}
	head, hash = st.Head()
	seen := map[events.ID]bool{}
	st.Scan(1, func(_ uint64, rec []byte) (bool, error) {
		id, _ := events.RecordID(rec)
		if seen[id] {
			twice++
		}
		seen[id] = true
		return true, nil
	})
	return src, head, hash, twice, st
}

// collectedUpTo is the stream seq a running collector's `verify` reports.
func collectedUpTo(data string) uint64 {
	out, _ := exec.Command(tbBin, "--data", data, "verify").CombinedOutput()
	m := regexp.MustCompile(`collected stream \S+ up to its seq (\d+)`).FindSubmatch(out)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseUint(string(m[1]), 10, 64)
	return n
}

// stopCollector stops a collector with SIGTERM and waits for it.
func stopCollector(t *testing.T, p *proc) {
	t.Helper()
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("collector exit %d: %s", code, p.stderrText())
	}
}

// Four machines drive load into a three-node cluster (R3, sync always); the
// stream leader is killed with SIGKILL mid-load and restarted, then a
// non-leader; one collector is killed with SIGKILL at random moments over
// and over. Every acknowledged event is then stored exactly once in every
// collector, and the collectors agree on the head and verify.
func TestClusterLoadThroughNodeAndCollectorKills(t *testing.T) {
	long(t)
	c := clustertest.Start(t, clustertest.Options{Nodes: 3})
	url := c.URL()
	steady := filepath.Join(t.TempDir(), "steady")
	killed := filepath.Join(t.TempDir(), "killed")
	steadyProc := start(t, tbBin, steady, "--nats-url", url, "--nats-user", "steady", "serve")
	killedProc := start(t, tbBin, killed, "--nats-url", url, "--nats-user", "killed", "serve")

	var loads []*proc
	for i := range 4 {
		data := filepath.Join(t.TempDir(), fmt.Sprintf("m%d", i))
		loads = append(loads, start(t, tbBin, data, "--nats-url", url, "--nats-user", fmt.Sprintf("m%d", i),
			"loadgen", "--requests", "0", "--concurrency", "16", "--acks"))
	}

	// The collector killed at random moments, restarted each time.
	var kills atomic.Int32
	stopKilling := make(chan struct{})
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
		for {
			select {
			case <-stopKilling:
				return
			case <-time.After(time.Duration(200+rng.IntN(500)) * time.Millisecond):
			}
			killedProc.cmd.Process.Kill()
			killedProc.cmd.Wait()
			kills.Add(1)
			killedProc = start(t, tbBin, killed, "--nats-url", url, "--nats-user", "killed", "serve")
		}
	}()

	t0 := time.Now()
	ackedSoFar := func() int {
		n := 0
		for _, p := range loads {
			n += len(p.output())
		}
		return n
	}
	// progress waits until the load has gone on past what it was (so each
	// kill lands mid-load, and the load survives it) and logs it.
	seen := 0
	progress := func(when string) {
		eventually(t, 60*time.Second, "the load goes on "+when, func() bool { return ackedSoFar() >= seen+2000 })
		seen = ackedSoFar()
		t.Logf("%5.1fs %s: %d events acknowledged so far", time.Since(t0).Seconds(), when, seen)
	}
	progress("before the leader kill")
	_, leader := streamInfo(t, url)
	var follower *clustertest.Node
	for _, n := range c.Nodes {
		if n.Name == leader {
			t.Logf("SIGKILL the stream leader %s", n.Name)
			c.Kill(n)
			time.Sleep(2 * time.Second)
			c.StartNode(n)
		}
	}
	progress("after the leader kill")
	_, leader = streamInfo(t, url)
	for _, n := range c.Nodes {
		if n.Name != leader && follower == nil {
			follower = n
		}
	}
	t.Logf("SIGKILL a follower %s (leader %s)", follower.Name, leader)
	c.Kill(follower)
	time.Sleep(2 * time.Second)
	c.StartNode(follower)
	progress("after the follower kill")

	var acked []events.ID
	for i, p := range loads {
		p.cmd.Process.Signal(os.Interrupt)
		p.wait(t, 60*time.Second)
		ids := ackedIDs(t, p.output())
		t.Logf("machine %d: %d events acknowledged; loadgen said: %s", i, len(ids), strings.TrimSpace(p.stderrText()))
		acked = append(acked, ids...)
	}
	for eventually := time.Now().Add(20 * time.Second); kills.Load() < 20 && time.Now().Before(eventually); {
		time.Sleep(100 * time.Millisecond)
	}
	close(stopKilling)
	<-killerDone
	if kills.Load() < 20 {
		t.Fatalf("the collector was killed %d times, want at least 20", kills.Load())
	}
	last, _ := streamInfo(t, url)
	t.Logf("%d events acknowledged; stream at %d; the collector was killed %d times", len(acked), last, kills.Load())

	// Let both collectors reach the stream's end, then stop them.
	for _, d := range []string{steady, killed} {
		eventually(t, 60*time.Second, d+" collected the stream", func() bool {
			return collectedUpTo(d) >= last
		})
	}
	stopCollector(t, steadyProc)
	stopCollector(t, killedProc)

	// Each collector's stop records log.hub.stopped through the stream, so
	// one may hold a little more than the other: the chains must agree up
	// to the shorter one (the hash at a seq covers everything before it).
	var stores []*store.Store
	var heads []uint64
	for _, d := range []string{steady, killed} {
		src, head, hash, twice, st := collectorState(t, d)
		stores, heads = append(stores, st), append(heads, head)
		missing, err := st.Missing(acked)
		if err != nil {
			t.Fatal(err)
		}
		if len(missing) > 0 || twice > 0 {
			t.Fatalf("%s: %d acknowledged events missing, %d stored twice", d, len(missing), twice)
		}
		verifyStore(t, d) // fails the test unless the chain verifies
		t.Logf("%s: stream position %d, head %d %v", filepath.Base(d), src.Seq, head, hash)
	}
	common := min(heads[0], heads[1])
	if common+5 < max(heads[0], heads[1]) {
		t.Fatalf("the collectors' heads %d and %d are further apart than their own stop events", heads[0], heads[1])
	}
	var at []events.Hash
	for _, st := range stores {
		evs, err := st.Range(common, 1)
		if err != nil || len(evs) != 1 {
			t.Fatalf("seq %d: %v", common, err)
		}
		at = append(at, evs[0].Hash)
		st.Close()
	}
	if at[0] != at[1] {
		t.Fatalf("the collectors disagree at seq %d: %v and %v", common, at[0], at[1])
	}
}
