package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store"
)

var (
	headRE   = regexp.MustCompile(`ok: (\d+) events, head seq (\d+)`)
	anchorRE = regexp.MustCompile(`starting after seq (\d+)`)
)

// verifyArchive runs verify --archive and returns the hot events, head and
// anchor; it fails the test unless both the log and the archive verify.
func verifyArchive(t *testing.T, data, archive string) (events, head, anchor int) {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", data, "verify", "--archive", archive).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "archive ok") {
		t.Fatalf("verify --archive: %v\n%s", err, out)
	}
	m := headRE.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("verify said %s", out)
	}
	events, _ = strconv.Atoi(m[1])
	head, _ = strconv.Atoi(m[2])
	if a := anchorRE.FindStringSubmatch(string(out)); a != nil {
		anchor, _ = strconv.Atoi(a[1])
	}
	return events, head, anchor
}

// archive is killed with SIGKILL at every step (failpoints) and at random
// moments, ≥50 times: each time the log and the archive verify, nothing is
// lost (the hot events plus the anchor make the head), and the next run
// goes on; a tampered or missing segment is named.
func TestArchiveSurvivesKills(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command(tbBin, "--data", data, "loadgen", "--requests", "400").CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	archive := filepath.Join(t.TempDir(), "archive")
	_, head, _ := verifyArchive(t, data, archive)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	steps := []string{"segment", "manifest", "drop", ""}
	kills := 0
	for i := range 60 {
		hot, h, anchor := verifyArchive(t, data, archive)
		if hot+anchor != h || h < head { // each archive run, as the hub, records its own start and stop
			t.Fatalf("iteration %d: %d hot events after anchor %d, head %d (was %d): events lost", i, hot, anchor, h, head)
		}
		head = h
		before := anchor + 2 + rng.IntN(max(1, (head-anchor)/20))
		if before >= head {
			break
		}
		// The failpoints are in the -tags tb_testtools build.
		cmd := exec.Command(tbTestBin, "--data", data, "archive", "--before", fmt.Sprint(before), "--out", archive)
		if i%2 == 0 { // a failpoint after a step
			cmd.Env = append(os.Environ(), "TB_FAILPOINT_ARCHIVE="+steps[i/2%len(steps)])
			out, err := cmd.CombinedOutput()
			if steps[i/2%len(steps)] != "" {
				if ee, ok := err.(*exec.ExitError); !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Fatalf("iteration %d: the failpoint did not kill: %v\n%s", i, err, out)
				}
				kills++
			} else if err != nil {
				t.Fatalf("iteration %d: %v\n%s", i, err, out)
			}
			continue
		}
		// A kill at a random moment.
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(60)) * time.Millisecond)
		if cmd.Process.Signal(syscall.SIGKILL) == nil {
			kills++
		}
		cmd.Wait()
	}
	if kills < 50 {
		t.Fatalf("only %d kills", kills)
	}
	_, _, anchor := verifyArchive(t, data, archive)
	if anchor == 0 {
		t.Fatal("nothing was ever archived")
	}
	// A run whose events were archived: replay says so, and reads it from
	// the archive when told where it is.
	out, _ := exec.Command(tbBin, "--data", data, "runs", "--kind", "all", "--limit", "0", "--json").Output()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	oldest := lines[len(lines)-1] // newest first
	id := oldest[strings.Index(oldest, `"requestId":"`)+13:][:26]
	if out, err := exec.Command(tbBin, "--data", data, "replay", id).CombinedOutput(); err == nil || !strings.Contains(string(out), "were archived") {
		t.Fatalf("replay of an archived run: %v\n%s", err, out)
	}
	if out, err := exec.Command(tbBin, "--data", data, "replay", id, "--archive", archive).CombinedOutput(); err != nil || !strings.Contains(string(out), id) {
		t.Fatalf("replay --archive: %v\n%s", err, out)
	}
	if out, _ := exec.Command(tbBin, "--data", data, "runs", "--kind", "all", "--limit", "0").Output(); !strings.Contains(string(out), "events archived") {
		t.Fatalf("runs does not mark archived runs:\n%.500s", out)
	}
	// The archive's files are evidence too; a killed run's leftovers are
	// cleaned by the next.
	m, err := store.ReadManifest(archive)
	if err != nil || len(m.Segments) == 0 {
		t.Fatalf("manifest: %v", err)
	}
	files, _ := filepath.Glob(filepath.Join(archive, "segment-*"))
	if len(files) > len(m.Segments)+1 { // the last run may have been killed after writing its segment
		t.Fatalf("%d segment files for %d listed segments", len(files), len(m.Segments))
	}
	segs := []string{filepath.Join(archive, m.Segments[len(m.Segments)/2].File)}
	b, _ := os.ReadFile(segs[0])
	b[len(b)/2] ^= 0x55
	os.WriteFile(segs[0], b, 0o600)
	out, err = exec.Command(tbBin, "--data", data, "verify", "--archive", archive).CombinedOutput()
	if err == nil || !strings.Contains(string(out), filepath.Base(segs[0])) {
		t.Fatalf("a tampered segment verified: %v\n%s", err, out)
	}
}

// [retention] keep archives old events in serve's hub on its schedule, and
// records it; the log and the archive verify afterwards.
func TestRetentionArchivesOnSchedule(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command(tbBin, "--data", data, "loadgen", "--requests", "50").CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	time.Sleep(1200 * time.Millisecond) // the loadgen's events are older than keep now
	cfg := writeConfig(t, "[retention]\nkeep = \"1s\"\nevery = \"200ms\"\n")
	serve := exec.Command(tbBin, "--data", data, "--log-level", "error", "serve", "--ui", "off")
	serve.Env = append(os.Environ(), cfg)
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "retention archives", func() bool { return countKind(t, data, "log.archived") > 0 })
	serve.Process.Signal(os.Interrupt)
	serve.Wait()
	if _, _, anchor := verifyArchive(t, data, filepath.Join(data, "archive")); anchor < 600 {
		t.Fatalf("retention archived up to seq %d; the loadgen wrote 600 events before it", anchor)
	}
}

// A rollback of the hot store to a copy taken before an archive (and
// before later events) is caught by a checkpoint exported after them.
func TestRollbackAcrossAnArchiveIsCaught(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
		return string(out), err
	}
	if out, err := run("loadgen", "--requests", "50"); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	old, err := os.ReadFile(filepath.Join(data, "events.db"))
	if err != nil {
		t.Fatal(err)
	}
	if out, err := run("loadgen", "--requests", "50"); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	cp := filepath.Join(t.TempDir(), "cp.json")
	if out, err := run("checkpoint", "export", cp); err != nil {
		t.Fatalf("checkpoint export: %v\n%s", err, out)
	}
	archive := filepath.Join(t.TempDir(), "archive")
	if out, err := run("archive", "--before", "500", "--out", archive); err != nil {
		t.Fatalf("archive: %v\n%s", err, out)
	}
	if out, err := run("verify", "--checkpoint", cp, "--archive", archive); err != nil {
		t.Fatalf("before the rollback: %v\n%s", err, out)
	}
	os.WriteFile(filepath.Join(data, "events.db"), old, 0o600)
	out, err := run("verify", "--checkpoint", cp, "--archive", archive)
	if err == nil || !strings.Contains(out, "rolled back") {
		t.Fatalf("a rolled-back store verified: %v\n%s", err, out)
	}
}

// A4: `replay ID --archive DIR` shows nothing of an archive that does not
// verify: a segment edited (and re-compressed) fails the replay, exit 1,
// with verify's message, and the forged text is never printed.
func TestReplayFromATamperedArchiveFails(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	if out, err := exec.Command(tbBin, "--data", data, "loadgen", "--requests", "50").CombinedOutput(); err != nil {
		t.Fatalf("loadgen: %v\n%s", err, out)
	}
	out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "1", "--from", "10", "--json").Output()
	var first struct{ RequestID string }
	json.Unmarshal(bytes.SplitN(out, []byte("\n"), 2)[0], &first)
	archive := filepath.Join(t.TempDir(), "archive")
	if out, err := exec.Command(tbBin, "--data", data, "archive", "--before", "400", "--out", archive).CombinedOutput(); err != nil {
		t.Fatalf("archive: %v\n%s", err, out)
	}
	if out, err := exec.Command(tbBin, "--data", data, "replay", first.RequestID, "--archive", archive).CombinedOutput(); err != nil {
		t.Fatalf("replay of a genuine archive: %v\n%s", err, out)
	}
	segs, _ := filepath.Glob(filepath.Join(archive, "*.tbseg"))
	b, _ := os.ReadFile(segs[0])
	zr, _ := gzip.NewReader(bytes.NewReader(b))
	raw, _ := io.ReadAll(zr)
	forged := bytes.ReplaceAll(raw, []byte(first.RequestID[:10]), []byte("FORGEDBYAT"))
	if bytes.Equal(forged, raw) {
		forged = bytes.Replace(raw, []byte("loadgen"), []byte("FORGEDB"), 1)
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(forged)
	zw.Close()
	os.WriteFile(segs[0], buf.Bytes(), 0o600)
	out, err := exec.Command(tbBin, "--data", data, "replay", first.RequestID, "--archive", archive).CombinedOutput()
	if err == nil || bytes.Contains(out, []byte("FORGED")) || !bytes.Contains(out, []byte("SHA-256")) {
		t.Fatalf("replay of a tampered archive: %v\n%s", err, out)
	}
}
