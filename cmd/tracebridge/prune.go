package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	process "github.com/tracebridge/tracebridge/internal/proc"
)

func runPrune(_ context.Context, m *Main, args []string) error {
	fs := m.flags("prune")
	older := durationFlag(fs, "older", 7*24*time.Hour, "remove what was last written more than `AGE` ago (7d, 36h)")
	dry := fs.Bool("n", false, "dry run: say what would be removed, remove nothing")
	if err := m.parse(fs, "prune [--older AGE] [-n]\n\nRemoves what tracebridge leaves behind and no longer needs: the bridges' log files\n(logs/mcp-<pid>.log in the data dir) of processes that are gone, and the\ndemo's kept data dirs and triad dirs in the temp dir, when older than AGE\n(default 7 days). The event log itself is evidence and is never pruned here:\nruns you do not want to see are hidden by `runs --kind` (AI clients' runs by\ndefault).", args); err != nil {
		return err
	}
	if *older < 0 {
		return usageError{"--older must not be negative"}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	cutoff := m.Now().Add(-*older)
	var candidates []string
	logs, _ := filepath.Glob(filepath.Join(dir.LogDir(), "mcp-*.log"))
	for _, l := range logs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(l), "mcp-%d.log", &pid); err == nil && process.Alive(pid) {
			continue // a bridge still writes it
		}
		candidates = append(candidates, l)
	}
	for _, pattern := range []string{"tracebridge-demo-*", "tb-session-*"} {
		found, _ := filepath.Glob(filepath.Join(os.TempDir(), pattern))
		candidates = append(candidates, found...)
	}
	removed := 0
	for _, p := range candidates {
		fi, err := os.Lstat(p)
		if err != nil || fi.ModTime().After(cutoff) {
			continue
		}
		if fi.IsDir() && !strings.HasPrefix(p, os.TempDir()) {
			continue
		}
		if *dry {
			fmt.Fprintf(m.Stdout, "would remove %s\n", p)
			removed++
			continue
		}
		if err := os.RemoveAll(p); err != nil {
			fmt.Fprintf(m.Stderr, "tracebridge prune: %s: %v\n", p, err)
			continue
		}
		fmt.Fprintf(m.Stdout, "removed %s\n", p)
		removed++
	}
	if removed == 0 {
		fmt.Fprintf(m.Stdout, "nothing older than %s to prune\n", *older)
	}
	return nil
}
