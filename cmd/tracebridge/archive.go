package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/tracebridge/tracebridge/hub"
)

const archiveHelp = `archive --before SEQ|TIME [--out DIR]

Moves the events older than SEQ (or than TIME: RFC 3339, or a duration ago such
as 90d written as 2160h) out of the hot log into a sealed segment of the archive
in DIR (default: archive/ in the data dir): the canonical records, gzip, with a
checkpoint signed at the segment's last event, listed in DIR/manifest.json. The
segment is durable before the events are dropped, in one transaction, and the
log keeps an anchor (the last archived seq and hash), so the whole history
stays verifiable: ` + "`tracebridge verify --archive DIR`" + `. Runs where the log is
open: stop the other tracebridge processes of the data dir first. The
projections keep their state; a rebuild after archiving starts at the anchor.`

func runArchive(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("archive")
	before := fs.String("before", "", "archive the events before this `SEQ` or TIME (required)")
	out := fs.String("out", "", "the archive `DIR` (default: archive/ in the data dir)")
	if err := m.parse(fs, archiveHelp, args); err != nil {
		return err
	}
	if *before == "" || fs.NArg() > 0 {
		return usageError{"want: archive --before SEQ|TIME [--out DIR]"}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir.Store()); err != nil {
		return fmt.Errorf("no event log at %s; nothing to archive", dir.Store())
	}
	if *out == "" {
		*out = dir.Archive()
	}
	node, err := m.open(ctx, hub.Elect, "archive")
	if err != nil {
		return err
	}
	defer node.Close()
	if !node.IsHub() {
		info, _ := node.Hub()
		return fmt.Errorf("a hub runs for this data dir (pid %d): archiving needs the log's own process; stop it, archive, start it again", info.PID)
	}
	var upTo uint64
	if n, err := strconv.ParseUint(*before, 10, 64); err == nil {
		if n < 2 {
			return usageError{"--before: nothing is older than seq " + *before}
		}
		upTo = n - 1
	} else if upTo, err = seqAt(ctx, node, m.Now(), *before); err != nil {
		return err
	}
	seg, err := node.Archive(ctx, *out, upTo, archiveFailpoint)
	if err != nil {
		return err
	}
	if em, err := m.emitter(dir, node, m.logger()); err == nil {
		em.Emit(hub.ArchiveEvent(seg, *out, "operator"))
		em.Close(ctx)
	}
	fmt.Fprintf(m.Stdout, "archived seq %d to %d into %s (sha256 %s…); the log now starts after seq %d\n",
		seg.First, seg.Last, filepath.Join(*out, seg.File), seg.SHA256[:12], seg.Last)
	return nil
}
