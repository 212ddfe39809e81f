//go:build linux

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// TestDiskFullPausesAndResumes fills a small tmpfs (in a mount namespace of
// its own; 384k for the log beside the journal's preallocated 4 MiB and
// 24 MiB of filler: what the journal holds — up to maxUnapplied, 4 MiB, about
// 10 MiB once in bbolt with its covering copies and indexes — must
// fit once it is freed) with appends: the batch that meets ENOSPC is refused, never
// acknowledged; the status says the disk is full; the chain still
// verifies; once space is freed the next append succeeds without a
// restart; after reopening, every acknowledged event is there.
func TestDiskFullPausesAndResumes(t *testing.T) {
	if os.Getenv("TB_DISKFULL_DIR") != "" {
		diskFullHelper()
		return
	}
	dir := t.TempDir()
	script := `mount -t tmpfs -o size=29056k none "$1" && dd if=/dev/zero of="$1/filler" bs=64k count=384 2>/dev/null; exec "$2" -test.run '^TestDiskFullPausesAndResumes$' -test.count=1 -test.v`
	cmd := exec.Command("unshare", "--mount", "sh", "-c", script, "sh", dir, os.Args[0])
	cmd.Env = append(os.Environ(), "TB_DISKFULL_DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the full-disk run (unshare --mount, tmpfs): %v\n%s", err, out)
	}
	t.Logf("%s", out)
	for _, want := range []string{"full: LogUnavailable", "status: LogUnavailable: the disk is full since", "verify: chain ok, appends refused", "resumed: ok", "reopened: all acked present, chain ok"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in:\n%s", want, out)
		}
	}
}

func diskFullHelper() {
	dir := os.Getenv("TB_DISKFULL_DIR")
	say := func(f string, a ...any) { fmt.Printf(f+"\n", a...) }
	path := filepath.Join(dir, "events.db")
	s, err := Open(path, Options{})
	if err != nil {
		say("open: %v", err)
		return
	}
	ctx := context.Background()
	var acked []events.ID
	big := strings.Repeat("x", 2000)
	for i := 0; i < 100000; i++ {
		req := testIDs.New()
		batch := make([]events.Event, 8)
		for j := range batch {
			batch[j] = ev(req, i*8+j)
			batch[j].Attrs.Set("pad", big)
		}
		_, err := s.Append(ctx, batch)
		var rej *events.Err
		if errors.As(err, &rej) {
			say("full: %s after %d acked events", rej.Code, len(acked))
			break
		}
		if err != nil {
			say("append: %v", err)
			return
		}
		for _, e := range batch {
			acked = append(acked, e.ID)
		}
	}
	say("status: %s", s.AppendStatus())
	if rep, err := s.Verify(); err == nil && rep.OK() && rep.Appends != "" && !rep.Healthy() {
		say("verify: chain ok, appends refused")
	}
	os.Remove(filepath.Join(dir, "filler"))
	req := testIDs.New()
	e := ev(req, 1)
	if _, err := s.Append(ctx, []events.Event{e}); err == nil && s.AppendStatus() == "" {
		say("resumed: ok")
		acked = append(acked, e.ID)
	} else {
		say("resumed: %v %s", err, s.AppendStatus())
	}
	s.Close()
	s, err = Open(path, Options{})
	if err != nil {
		say("reopen: %v", err)
		return
	}
	defer s.Close()
	lost, err := s.Missing(acked)
	if err != nil {
		say("reading the store: %v", err)
		return
	}
	missing := len(lost)
	rep, _ := s.Verify()
	if missing == 0 && rep.OK() {
		say("reopened: all acked present, chain ok (%d events)", rep.Events)
	} else {
		say("reopened: %d acked missing; %s", missing, rep)
	}
}
