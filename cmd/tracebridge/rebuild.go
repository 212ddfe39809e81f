package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/projections"
)

func runRebuild(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("rebuild")
	if err := m.parse(fs, "rebuild [NAME...]\n\nRecomputes projections from seq 1 of the log, with a progress bar on stderr.\nNames: "+strings.Join(projections.Names(), ", ")+" (all when none given).\nThe hub does the work (this process becomes the hub if none runs);\nqueries wait for it.", args); err != nil {
		return err
	}
	for _, n := range fs.Args() {
		if !slices.Contains(projections.Names(), n) {
			return usageError{fmt.Sprintf("no projection %q; there are %s", n, strings.Join(projections.Names(), ", "))}
		}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir.Store()); err != nil {
		return fmt.Errorf("no event log at %s; nothing has run on this data dir yet (check --data)", dir.Store())
	}
	node, err := m.open(ctx, hub.Elect, "rebuild")
	if err != nil {
		return err
	}
	defer node.Close()
	bar := newProgressBar(m.Stderr, "rebuild")
	start := time.Now()
	n, err := node.Rebuild(ctx, fs.Args(), bar.update)
	bar.done()
	if err != nil {
		return err
	}
	names := fs.Args()
	if len(names) == 0 {
		names = projections.Names()
	}
	took := time.Since(start)
	fmt.Fprintf(m.Stdout, "rebuilt %s from %d events in %s (%.0f events/s)\n", strings.Join(names, ", "), n,
		took.Round(time.Millisecond), float64(n)/max(took.Seconds(), 1e-9))
	return nil
}

// progressBar draws done/total on a terminal, or prints a line every 10%
// elsewhere (a CI log).
type progressBar struct {
	w     io.Writer
	label string
	tty   bool
	start time.Time
	last  time.Time
	shown uint64 // tenths printed, off a terminal
	drawn bool
}

func newProgressBar(w io.Writer, label string) *progressBar {
	tty := false
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return &progressBar{w: w, label: label, tty: tty, start: time.Now()}
}

func (p *progressBar) update(done, total uint64) {
	if total == 0 {
		return
	}
	frac := float64(done) / float64(total)
	rate := float64(done) / max(time.Since(p.start).Seconds(), 1e-9)
	if !p.tty {
		if tenth := uint64(frac * 10); tenth > p.shown || done == total && p.shown < 10 {
			p.shown = max(tenth, 1)
			fmt.Fprintf(p.w, "%s: %3.0f%% %d/%d events (%.0f/s)\n", p.label, frac*100, done, total, rate)
		}
		return
	}
	if time.Since(p.last) < 50*time.Millisecond && done < total {
		return
	}
	p.last = time.Now()
	const width = 30
	fill := int(frac * width)
	fmt.Fprintf(p.w, "\r%s [%s%s] %3.0f%% %d/%d events (%.0f/s)", p.label, strings.Repeat("#", fill),
		strings.Repeat(".", width-fill), frac*100, done, total, rate)
	p.drawn = true
}

func (p *progressBar) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
