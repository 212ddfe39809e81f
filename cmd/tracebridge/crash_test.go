package main

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// crashIterations is how many times the crash loop kills its child. The
// issue asks for at least 200 in `make test`; TRACEBRIDGE_CRASH_ITERATIONS
// raises it for a longer soak.
func crashIterations() int {
	if n, err := strconv.Atoi(os.Getenv("TRACEBRIDGE_CRASH_ITERATIONS")); err == nil && n > 0 {
		return n
	}
	return 200
}

// crashLoop starts `loadgen --acks` on one data dir, lets it run a random
// few milliseconds past its first acknowledged request, kills it with
// SIGKILL, and checks that every id it acknowledged is stored. It returns
// the acknowledged ids that were lost and the number acknowledged.
//
// Each request's pipe answer is 6000 bytes, a payload of its own, unless
// noPayloads: the lying build answers a payload's put before it commits, so
// its own store then refuses the event that refers to it (PayloadMissing)
// before any loss could be seen.
func crashLoop(t *testing.T, bin string, iterations int, seed uint64, noPayloads bool) (lost []events.ID, acked int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	data := filepath.Join(t.TempDir(), "data")
	for i := 0; i < iterations; i++ {
		answer := "6000"
		if noPayloads {
			answer = "0"
		}
		p := start(t, bin, data, "loadgen", "--requests", "0", "--concurrency", "8", "--events", "12", "--answer-bytes", answer, "--acks")
		select {
		case <-p.first:
		case <-p.eof:
			t.Fatalf("iteration %d: loadgen exited before acknowledging anything: %s", i, p.stderrText())
		case <-time.After(20 * time.Second):
			t.Fatalf("iteration %d: loadgen acknowledged nothing in 20s: %s", i, p.stderrText())
		}
		time.Sleep(time.Duration(rng.IntN(30_000)) * time.Microsecond)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.eof
		p.cmd.Wait()
		ids := ackedIDs(t, p.output())
		acked += len(ids)
		lost = append(lost, checkStored(t, data, ids)...)
		if len(lost) > 0 {
			return lost, acked // enough to judge
		}
		if i%25 == 24 || i == iterations-1 {
			verifyStore(t, data)
		}
	}
	return lost, acked
}

func TestKillNineLosesNothingAcknowledged(t *testing.T) {
	long(t)
	seed := rand.Uint64()
	n := crashIterations()
	t.Logf("seed %d, %d iterations (rerun a failure with the seed in crashLoop)", seed, n)
	lost, acked := crashLoop(t, tbBin, n, seed, false)
	if len(lost) > 0 {
		t.Fatalf("%d of %d acknowledged events were lost after kill -9, e.g. %s", len(lost), acked, lost[0])
	}
	t.Logf("%d acknowledged events, all stored, over %d kills", acked, n)
}

// TestCrashLoopCatchesAStoreThatLies builds tracebridge with the
// tb_nodurability tag (no fsync, acknowledge before commit) and expects the
// same crash loop to find acknowledged events missing: the test can fail.
func TestCrashLoopCatchesAStoreThatLies(t *testing.T) {
	long(t)
	unsafeBin := filepath.Join(t.TempDir(), "tracebridge-unsafe")
	if err := buildBinary(unsafeBin, "tb_nodurability"); err != nil {
		t.Fatal(err)
	}
	seed := rand.Uint64()
	lost, acked := crashLoop(t, unsafeBin, 100, seed, true)
	if len(lost) == 0 {
		t.Fatalf("seed %d: the crash loop found no loss in a build that acknowledges before commit (%d acked)", seed, acked)
	}
	t.Logf("seed %d: unsafe build lost %d acknowledged events, as it must", seed, len(lost))
}
