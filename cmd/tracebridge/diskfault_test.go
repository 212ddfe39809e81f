//go:build linux

package main

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
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
		{"fsync EIO", powercut.Fault{Op: powercut.OpFsync, Path: "events.db", Errno: syscall.EIO}, "commit failed, store stopped"},
		{"fsync ENOSPC", powercut.Fault{Op: powercut.OpFsync, Path: "events.db", Errno: syscall.ENOSPC}, "commit failed, store stopped"},
		{"write ENOSPC", powercut.Fault{Op: powercut.OpWrite, Path: "events.db", Errno: syscall.ENOSPC}, "the disk is full"},
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

// TestStateWritesFailWhole runs out of space while tracebridge writes its
// other files: a key at first start, the signed checkpoint, the host's
// proposal state. Each time the operation fails with a clear error, the
// file is the old version or absent (never empty or torn, also on the image
// a power cut right then leaves), and once space is back the same step
// succeeds.
func TestStateWritesFailWhole(t *testing.T) {
	long(t)
	cli := func(data string, args ...string) (string, error) {
		out, err := exec.Command(tbBin, append([]string{"--data", data, "--log-level", "warn"}, args...)...).CombinedOutput()
		return string(out), err
	}
	mount := func(t *testing.T) (*powercut.FS, string, string) {
		base := t.TempDir()
		backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
		os.MkdirAll(filepath.Join(backing, "ws"), 0o755)
		os.WriteFile(filepath.Join(backing, "ws", "a.txt"), []byte("alpha\n"), 0o644)
		return mountPowerCut(t, backing, mnt), mnt, base
	}
	whole := func(t *testing.T, pfs *powercut.FS, base, rel string, check func([]byte) bool) {
		t.Helper()
		img := filepath.Join(base, "image")
		os.RemoveAll(img)
		if err := pfs.Cut(img, powercut.Tear{Keep: 0}, rand.New(rand.NewPCG(2, 2))); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(img, rel))
		if err != nil && !os.IsNotExist(err) || err == nil && !check(b) {
			t.Fatalf("%s after a cut: %v %q", rel, err, b)
		}
	}

	t.Run("key", func(t *testing.T) {
		pfs, mnt, base := mount(t)
		data := filepath.Join(mnt, "data")
		pfs.Inject(powercut.Fault{Op: powercut.OpWrite, Path: "checkpoint.key", Errno: syscall.ENOSPC})
		out, err := cli(data, "loadgen", "--requests", "5")
		if err == nil || !strings.Contains(out, "checkpoint.key") || !strings.Contains(out, "no space left on device") {
			t.Fatalf("loadgen with no space for the signing key: %v\n%s", err, out)
		}
		t.Logf("loadgen: %s", strings.TrimSpace(out))
		if _, err := os.Stat(filepath.Join(data, "keys", "checkpoint.key")); !os.IsNotExist(err) {
			t.Fatalf("a key file exists after its write failed: %v", err)
		}
		whole(t, pfs, base, "data/keys/checkpoint.key", func(b []byte) bool { return len(b) == 32 })
		pfs.ClearFaults()
		if out, err := cli(data, "loadgen", "--requests", "5"); err != nil {
			t.Fatalf("space back: %v\n%s", err, out)
		}
		if out, err := cli(data, "verify"); err != nil {
			t.Fatalf("verify: %v\n%s", err, out)
		}
	})

	t.Run("checkpoint", func(t *testing.T) {
		pfs, mnt, base := mount(t)
		data := filepath.Join(mnt, "data")
		if out, err := cli(data, "loadgen", "--requests", "5"); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		before, _ := os.ReadFile(filepath.Join(data, "checkpoint.json"))
		pfs.Inject(powercut.Fault{Op: powercut.OpWrite, Path: "checkpoint.json", Errno: syscall.ENOSPC})
		out, err := cli(data, "loadgen", "--requests", "5")
		if err != nil || !strings.Contains(out, "could not write checkpoint") {
			t.Fatalf("a failed checkpoint must not fail the appends, and must be said: %v\n%s", err, out)
		}
		if after, _ := os.ReadFile(filepath.Join(data, "checkpoint.json")); string(after) != string(before) {
			t.Fatalf("checkpoint.json changed though its write failed:\n%s\n%s", before, after)
		}
		whole(t, pfs, base, "data/checkpoint.json", func(b []byte) bool { return string(b) == string(before) })
		pfs.ClearFaults()
		if out, err := cli(data, "verify"); err != nil {
			t.Fatalf("verify with the older checkpoint: %v\n%s", err, out)
		}
		out, err = cli(data, "tail", "--json", "-n", "1000")
		if err != nil || !strings.Contains(firstLine(out, "log.checkpoint.failed"), "no space left on device") || !strings.Contains(firstLine(out, "log.checkpoint.failed"), "LogUnavailable") {
			t.Fatalf("the failure is not an event: %v\n%s", err, out)
		}
	})

	t.Run("host state", func(t *testing.T) {
		pfs, mnt, base := mount(t)
		data, ws := filepath.Join(mnt, "data"), filepath.Join(mnt, "ws")
		start(t, tbBin, data, "up", "--root", ws)
		waitHost(t, data)
		b := startBridge(t, tbBin, data, "2025-06-18")
		res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "a.txt", "original": "alpha", "replacement": "ALPHA"})
		if code != "" {
			t.Fatalf("propose: %s %s", code, textOf(res))
		}
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		pfs.Inject(powercut.Fault{Op: powercut.OpWrite, Path: "proposals.json", Errno: syscall.ENOSPC})
		out, err := cli(data, "proposals", "approve", p.ProposalID)
		if err == nil || !strings.Contains(out, "no space left on device") {
			t.Fatalf("approve with no space for the host's state: %v\n%s", err, out)
		}
		t.Logf("approve: %s", strings.TrimSpace(out))
		if got, _ := os.ReadFile(filepath.Join(ws, "a.txt")); string(got) != "alpha\n" {
			t.Fatalf("the file was written though the state could not be: %q", got)
		}
		whole(t, pfs, base, "ws/a.txt", func(b []byte) bool { return string(b) == "alpha\n" })
		pfs.ClearFaults()
		out, err = cli(data, "proposals", "approve", p.ProposalID)
		if err != nil || !strings.Contains(out, "applied") {
			t.Fatalf("approve once space is back: %v\n%s", err, out)
		}
		b.close(t)
	})
}

// TestSideEffectsRefusedAfterAFailedFsync: a bridge that is its own hub on
// the power-cut file system; once an fsync of the log fails, a
// side-effecting tool is refused with LogUnavailable and does not run, and a
// read-only one still answers (policy), as with any log that cannot take
// events.
func TestSideEffectsRefusedAfterAFailedFsync(t *testing.T) {
	long(t)
	base := t.TempDir()
	backing, mnt := filepath.Join(base, "backing"), filepath.Join(base, "mnt")
	os.Mkdir(backing, 0o700)
	pfs := mountPowerCut(t, backing, mnt)
	marker := filepath.Join(base, "ran")
	b := startBridge(t, tbTestBin, mnt, "2025-06-18",
		writeConfig(t, "[approval]\nmode = \"allow\"\n[policy]\ngrant = [\"text.search\", \"workspace.write\"]\n"))
	if _, _, code := b.call(t, "regex_text_search", map[string]any{"query": "a", "text": "a"}); code != "" {
		t.Fatalf("before the fault: %q", code)
	}
	pfs.Inject(powercut.Fault{Op: powercut.OpFsync, Path: "events.db", Errno: syscall.EIO})
	res, _, code := b.call(t, "test_write", map[string]any{"marker": marker})
	if code != events.CodeLogUnavailable {
		t.Fatalf("a side-effecting tool after a failed fsync: %q %s", code, textOf(res))
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatal("the tool ran though its evidence could not be made durable")
	}
	if _, _, code := b.call(t, "regex_text_search", map[string]any{"query": "a", "text": "a"}); code != "" {
		t.Fatalf("a read-only tool after the fault: %q", code)
	}
	t.Logf("refused: %s", textOf(res))
	b.close(t)
}
