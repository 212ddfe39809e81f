package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Three appenders, a tail and a verify on one data dir at once: none hangs,
// the hub moves from process to process as they exit, and every acknowledged
// event is stored once and seen once by the tail.
func TestConcurrentProcessesShareOneLog(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	const perProc = 60 * 12
	var loaders []*proc
	for i := 0; i < 3; i++ {
		loaders = append(loaders, start(t, tbBin, data, "loadgen", "--requests", "60", "--concurrency", "4", "--acks"))
	}
	tail := start(t, tbBin, data, "tail", "-f", "--from", "1", "--json")
	verify := exec.Command(tbBin, "--data", data, "verify")
	verifyOut := make(chan []byte, 1)
	go func() {
		// While the loaders run: as soon as the first of them made the log
		// (a fixed sleep raced with busy machines).
		for i := 0; i < 1000; i++ {
			if _, err := os.Stat(filepath.Join(data, "events.db")); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		var stderr strings.Builder
		verify.Stderr = &stderr // re-election notices go there; the report is on stdout
		out, err := verify.Output()
		if err != nil {
			out = append(out, []byte(" (exit: "+err.Error()+"; stderr: "+stderr.String()+")")...)
		}
		verifyOut <- out
	}()

	var acked []events.ID
	for i, p := range loaders {
		if code := p.wait(t, 60*time.Second); code != 0 {
			t.Fatalf("loader %d exited %d: %s", i, code, p.stderrText())
		}
		ids := ackedIDs(t, p.output())
		if len(ids) != perProc {
			t.Fatalf("loader %d acknowledged %d events, want %d", i, len(ids), perProc)
		}
		acked = append(acked, ids...)
	}
	select {
	case out := <-verifyOut:
		if !strings.HasPrefix(string(out), "ok:") {
			t.Fatalf("concurrent verify: %s", out)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("verify hung beside the appenders")
	}

	want := map[events.ID]bool{}
	for _, id := range acked {
		want[id] = true
	}
	seen := map[events.ID]int{}
	defer func() {
		if t.Failed() {
			tail.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump on its stderr
			time.Sleep(500 * time.Millisecond)
			state := "still running"
			select {
			case <-tail.eof:
				state = "stdout closed (exited?)"
			default:
			}
			t.Logf("tail printed %d lines, %s; its stderr:\n%s", len(tail.output()), state, tail.stderrText())
		}
	}()
	eventually(t, 30*time.Second, "tail to print every acknowledged event", func() bool {
		n := 0
		clear(seen)
		for _, l := range tail.output() {
			var e events.Event
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("tail --json printed %q: %v", l, err)
			}
			seen[e.ID]++
			if want[e.ID] {
				n++
			}
		}
		return n >= len(want)
	})
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("tail printed event %s %d times", id, n)
		}
	}
	tail.cmd.Process.Signal(syscall.SIGINT)
	if code := tail.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("tail exited %d on SIGINT: %s", code, tail.stderrText())
	}
	if missing := checkStored(t, data, acked); len(missing) > 0 {
		t.Fatalf("%d acknowledged events missing", len(missing))
	}
	out := verifyStore(t, data)
	t.Logf("%d events acknowledged by 3 processes; %s", len(acked), strings.TrimSpace(out))
}

// The hub is killed with SIGKILL while another process appends through it:
// that process elects itself, re-sends what was not acknowledged, and keeps
// going; nothing acknowledged by either is lost.
func TestHubKilledWhileAnotherProcessAppends(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	first := start(t, tbBin, data, "loadgen", "--requests", "0", "--concurrency", "2", "--acks")
	<-first.first // first is the hub now
	second := start(t, tbBin, data, "loadgen", "--requests", "0", "--concurrency", "2", "--acks")
	<-second.first
	first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.eof
	first.cmd.Wait()
	before := len(second.output())
	eventually(t, 30*time.Second, "the survivor to append after the hub died", func() bool {
		return len(second.output()) > before+600
	})
	second.cmd.Process.Signal(syscall.SIGINT)
	if code := second.wait(t, 30*time.Second); code != 0 {
		t.Fatalf("survivor exited %d: %s", code, second.stderrText())
	}
	if !strings.Contains(second.stderrText(), "as the hub") {
		t.Fatalf("the survivor did not take over as hub: %s", second.stderrText())
	}
	acked := append(ackedIDs(t, first.output()), ackedIDs(t, second.output())...)
	if missing := checkStored(t, data, acked); len(missing) > 0 {
		t.Fatalf("%d of %d acknowledged events missing after the hub was killed", len(missing), len(acked))
	}
	verifyStore(t, data)
}

// A second `serve` on a data dir that has a hub fails fast and says why.
func TestSecondServeFailsFast(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	srv := start(t, tbBin, data, "serve")
	eventually(t, 10*time.Second, "hub.json", func() bool {
		return exec.Command(tbBin, "--data", data, "verify").Run() == nil
	})
	out, err := exec.Command(tbBin, "--data", data, "serve").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "a hub already runs") {
		t.Fatalf("second serve: %v %s", err, out)
	}
	srv.cmd.Process.Signal(syscall.SIGTERM)
	if code := srv.wait(t, 10*time.Second); code != 0 {
		t.Fatalf("serve exited %d on SIGTERM: %s", code, srv.stderrText())
	}
	verifyStore(t, data)
}
