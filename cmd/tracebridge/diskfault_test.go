//go:build linux

package main

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/powercut"
)

// TestDiskFaultsNeverAcknowledged fails the log's disk under a running
// `loadgen --acks`: an fsync with EIO, an fsync with ENOSPC, a write with
// ENOSPC. Each time the appends in flight are refused with LogUnavailable
// and the reason, nothing is acknowledged that a power cut right after
// would lose (the file system drops a failed fsync's pages for good, as
// Linux does, so a store that retried the fsync and then acknowledged
// would lose them), and a restart once the disk is good again verifies and
// appends.
func TestDiskFaultsNeverAcknowledged(t *testing.T) {
	long(t)
	for _, tc := range []struct {
		name  string
		fault powercut.Fault
		say   string
	}{
		{"fsync EIO", powercut.Fault{Op: powercut.OpFsync, Suffix: "events.db", Errno: syscall.EIO}, "commit failed, store stopped"},
		{"fsync ENOSPC", powercut.Fault{Op: powercut.OpFsync, Suffix: "events.db", Errno: syscall.ENOSPC}, "commit failed, store stopped"},
		{"write ENOSPC", powercut.Fault{Op: powercut.OpWrite, Suffix: "events.db", Errno: syscall.ENOSPC}, "the disk is full"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
			os.Mkdir(backing, 0o700)
			pfs := mountPowerCut(t, backing, mnt)
			p := start(t, tbBin, mnt, "loadgen", "--requests", "0", "--concurrency", "8", "--events", "12", "--acks")
			select {
			case <-p.first:
			case <-time.After(30 * time.Second):
				t.Fatalf("loadgen acknowledged nothing in 30s: %s", p.stderrText())
			}
			time.Sleep(20 * time.Millisecond)
			pfs.Inject(tc.fault)
			if code := p.wait(t, 30*time.Second); code == 0 {
				t.Fatalf("loadgen went on after the disk failed: %s", p.stderrText())
			}
			stderr := p.stderrText()
			if !strings.Contains(stderr, "LogUnavailable") || !strings.Contains(stderr, tc.say) {
				t.Errorf("loadgen's error should name LogUnavailable and %q:\n%s", tc.say, stderr)
			}
			if pfs.Stats().Failed == 0 {
				t.Fatal("the fault never fired")
			}
			ids := ackedIDs(t, p.output())
			img := filepath.Join(base, "image")
			if err := pfs.Cut(img, powercut.Tear{Keep: 0}, rand.New(rand.NewPCG(1, 1))); err != nil {
				t.Fatal(err)
			}
			missing, err := storedIn(img, ids)
			if err != nil {
				t.Fatalf("after the fault and a power cut the log does not open: %v", err)
			}
			if len(missing) > 0 {
				t.Fatalf("%d of %d acknowledged events are not on disk: acknowledged after a failed fsync", len(missing), len(ids))
			}
			t.Logf("%d events acknowledged before the fault, all on disk; refused with: %s", len(ids), firstLine(stderr, "LogUnavailable"))

			// The disk is good again: a restart reads back a verified log and
			// appends, on the live file system and on the image a power cut
			// would have left.
			pfs.ClearFaults()
			for _, dir := range []string{mnt, img} {
				for _, args := range [][]string{{"verify"}, {"loadgen", "--requests", "10"}, {"verify"}} {
					if out, err := exec.Command(tbBin, append([]string{"--data", dir}, args...)...).CombinedOutput(); err != nil {
						t.Fatalf("restart on %s: tracebridge %s: %v\n%s", dir, args[0], err, out)
					}
				}
			}
		})
	}
}

func firstLine(text, with string) string {
	for _, l := range strings.Split(text, "\n") {
		if strings.Contains(l, with) {
			return l
		}
	}
	return ""
}
