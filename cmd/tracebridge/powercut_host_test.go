//go:build linux

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// hostCuts is how many cuts the bridge-and-host loop makes: 30 in `make
// test`, TRACEBRIDGE_POWERCUT_HOST_CUTS (`make crash`) for more.
func hostCuts() int {
	if n, err := strconv.Atoi(os.Getenv("TRACEBRIDGE_POWERCUT_HOST_CUTS")); err == nil && n > 0 {
		return n
	}
	return 30
}

// hostAck is what the loop was told: a proposal created (its request
// answered), or applied (the operator's approve said so).
type hostAck struct {
	req     events.ID
	id      string
	applied bool
	n       int // the counter both files hold once it is applied
}

// TestPowerCutBridgeAndHost drives a real bridge over MCP and a workspace
// host on the power-cut file system, data dir and workspace both: each
// round proposes an all-or-nothing edit of two files (the side-effecting
// call) and approves it (the host applies it through its journal), again
// and again, until a cut at a random moment. Then `tracebridge up` starts
// on the image and the test checks: every answered request's events are in
// the log; the files hold one counter, both the same (the set applied
// whole or not at all), at least the last one the operator was told was
// applied, which the proposal state says is applied; no temporary file is
// left and nothing appeared outside the root; the image passes checkImage.
func TestPowerCutBridgeAndHost(t *testing.T) {
	long(t)
	seed := rand.Uint64()
	rng := rand.New(rand.NewPCG(seed, 7))
	cuts := hostCuts()
	t.Logf("seed %d, %d cuts", seed, cuts)
	base := t.TempDir()
	img := filepath.Join(base, "image-0")
	for _, f := range []string{"a.txt", "b.txt"} {
		os.MkdirAll(filepath.Join(img, "ws"), 0o755)
		os.WriteFile(filepath.Join(img, "ws", f), []byte("n=0\n"), 0o644)
	}
	keys := map[string][]byte{}
	var answered, applied int
	var told []hostAck                // what the last round was told before its cut
	mnt := filepath.Join(base, "mnt") // one path: the host keys its state by the root's path
	for i := 0; i <= cuts; i++ {
		pfs := mountPowerCut(t, img, mnt)
		data, ws := filepath.Join(mnt, "data"), filepath.Join(mnt, "ws")
		up := start(t, tbBin, data, "up", "--root", ws) // on the last cut's image: recovery runs here
		waitHost(t, data)
		if i > 0 {
			what := fmt.Sprintf("cut %d (%d told)", i, len(told))
			checkHostImage(t, mnt, told, what)
			if err := checkImage(tbBin, data, keys); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			for _, a := range told {
				if a.applied {
					applied++
				} else {
					answered++
				}
			}
		}
		if i == cuts {
			up.cmd.Process.Signal(syscall.SIGTERM)
			up.wait(t, 20*time.Second)
			pfs.Unmount()
			break
		}
		b := startBridge(t, tbBin, data, "2025-06-18")
		var mu sync.Mutex
		var acks []hostAck
		stop := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- proposeAndApprove(b, data, ws, stop, func(a hostAck) { mu.Lock(); acks = append(acks, a); mu.Unlock() })
		}()
		time.Sleep(time.Duration(50+rng.IntN(400)) * time.Millisecond)
		mu.Lock()
		told = slices.Clone(acks) // all true before the cut
		mu.Unlock()
		next := filepath.Join(base, fmt.Sprintf("image-%d", i+1))
		if err := pfs.Cut(next, randomTear(rng), rng); err != nil {
			t.Fatal(err)
		}
		close(stop)
		if err := <-done; err != nil {
			t.Fatalf("round %d: the workload failed before the cut: %v\nhost: %s", i+1, err, up.stderrText())
		}
		b.close(t)
		up.cmd.Process.Signal(syscall.SIGKILL)
		up.wait(t, 10*time.Second)
		if err := pfs.Unmount(); err != nil {
			t.Fatal(err)
		}
		os.RemoveAll(img)
		img = next
	}
	t.Logf("%d cuts; %d answered proposals and %d reported applied checked, none lost", cuts, answered, applied)
}

func waitHost(t *testing.T, data string) {
	t.Helper()
	eventually(t, 20*time.Second, "the workspace host", func() bool {
		out, err := exec.Command(tbBin, "--data", data, "proposals", "list").CombinedOutput()
		return err == nil && (strings.Contains(string(out), "ID") || strings.Contains(string(out), "no proposals"))
	})
}

// proposeAndApprove proposes n → n+1 in both files and approves it, until
// stop, telling ack what each step was answered. It reads n from the
// files, so it continues from whatever the last cut left.
func proposeAndApprove(b *mcpChild, data, ws string, stop chan struct{}, ack func(hostAck)) error {
	for {
		select {
		case <-stop:
			return nil
		default:
		}
		cur, err := os.ReadFile(filepath.Join(ws, "a.txt"))
		if err != nil {
			return err
		}
		var n int
		if _, err := fmt.Sscanf(string(cur), "n=%d", &n); err != nil {
			return fmt.Errorf("a.txt holds %q", cur)
		}
		edit := func(f string) any {
			return map[string]any{"path": f, "edits": []any{map[string]string{"original": fmt.Sprintf("n=%d\n", n), "replacement": fmt.Sprintf("n=%d\n", n+1)}}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := b.session.CallTool(ctx, &sdk.CallToolParams{Name: "propose_text_edits", Arguments: map[string]any{"files": []any{edit("a.txt"), edit("b.txt")}}})
		cancel()
		if err != nil {
			return err
		}
		if res.IsError {
			return fmt.Errorf("propose n=%d: %s", n+1, textOf(res))
		}
		req, _ := events.ParseID(fmt.Sprint(res.Meta["tracebridge/requestId"]))
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		ack(hostAck{req: req, id: p.ProposalID, n: n + 1})
		out, err := exec.Command(tbBin, "--data", data, "proposals", "approve", p.ProposalID).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "applied") {
			return fmt.Errorf("approve %s: %v %s", p.ProposalID, err, out)
		}
		ack(hostAck{id: p.ProposalID, applied: true, n: n + 1})
	}
}

// checkHostImage checks what the loop was told against a cut image, once
// `tracebridge up` started on it (its journal finished any set the cut
// interrupted).
func checkHostImage(t *testing.T, img string, told []hostAck, what string) {
	t.Helper()
	data, ws := filepath.Join(img, "data"), filepath.Join(img, "ws")
	read := func(f string) string { b, _ := os.ReadFile(filepath.Join(ws, f)); return string(b) }
	a, b := read("a.txt"), read("b.txt")
	var n int
	if _, err := fmt.Sscanf(a, "n=%d", &n); err != nil || a != b {
		t.Fatalf("%s: the set is not whole: a.txt=%q b.txt=%q", what, a, b)
	}
	last := 0
	for _, k := range told {
		if k.applied {
			last = k.n
		}
	}
	if n < last {
		t.Fatalf("%s: the files hold n=%d but the operator was told n=%d was applied", what, n, last)
	}
	for _, k := range told {
		if !k.applied {
			continue
		}
		out, err := exec.Command(tbBin, "--data", data, "proposals", "show", k.id, "--json").CombinedOutput()
		if err != nil || !strings.Contains(string(out), `"state": "applied"`) {
			t.Fatalf("%s: proposal %s (n=%d) was reported applied; after the cut: %v %s", what, k.id, k.n, err, out)
		}
	}
	ents, _ := os.ReadDir(ws)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"a.txt", "b.txt"}) {
		t.Fatalf("%s: the workspace holds %v after recovery: a temporary file left, or a file outside the edit", what, names)
	}
	top, _ := os.ReadDir(img)
	for _, e := range top {
		if e.Name() != "data" && e.Name() != "ws" {
			t.Fatalf("%s: %s appeared outside the data dir and the root", what, e.Name())
		}
	}
	for _, k := range told {
		if k.applied {
			continue
		}
		// Its run is on record and closed: applied, or failed because the
		// cut stopped the apply before any file was written.
		out, err := exec.Command(tbBin, "--data", data, "replay", k.req.String(), "--format", "json").CombinedOutput()
		var run struct {
			Status  string
			Verdict struct{ Code string }
		}
		json.Unmarshal(out, &run)
		if err != nil || run.Status != "ok" && run.Verdict.Code != string(events.CodeApplyInterrupted) {
			t.Fatalf("%s: request %s was answered (proposal %s); after the cut its run: %v %s", what, k.req, k.id, err, out)
		}
	}
}
