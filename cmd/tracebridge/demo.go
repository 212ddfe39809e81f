package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/export"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
	"github.com/tracebridge/tracebridge/store"
)

func runDemo(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("demo")
	keep := fs.Bool("keep", false, "keep the data dir and, at the end, serve the workspace host and the operator UI (its URL is printed) until Ctrl-C")
	artifacts := fs.String("artifacts", "", "write the failed run's triad under `ROOT` (default: a new directory in the temp dir, kept)")
	fs.Lookup("data").Usage = "a fresh data `DIR` (it must not exist or be empty; default a temporary one; $TRACEBRIDGE_DATA is not used)"
	if err := m.parse(fs, "demo [--data DIR] [--keep] [--artifacts ROOT]\n\nStarts a hub on a fresh data dir (a temporary one, or --data DIR, which must\nnot exist yet or be empty; $TRACEBRIDGE_DATA is not used; besides it the demo\nwrites only the failed run's triad, in a new temp directory it names, or\nunder --artifacts ROOT), drives a scripted MCP session through `tracebridge mcp` (a success, a policy\ndenial, an unknown tool, bad arguments) and prints one call's evidence,\nappends a burst of requests while following them live, verifies the chain,\nexports a signed checkpoint, shows verify catching a byte edited in a copy\nof the store, and ends as an operator would: the session's runs, the replay\nof the run that failed (verdict and diagram) and the triad it wrote.\n\nWith --keep it then prints the operator UI's URL and serves it, with the\nworkspace host, until Ctrl-C: the demo's runs, an edit proposal waiting for\na decision and the review are there to look at.", args); err != nil {
		return err
	}
	root, cleanup, err := demoRoot(m, *keep)
	if err != nil {
		return err
	}
	defer cleanup()
	ws := filepath.Join(root, "workspace")
	out := m.Stdout
	step := func(format string, args ...any) { fmt.Fprintf(out, "\n== "+format+"\n", args...) }
	fmt.Fprintf(out, "tracebridge demo: writes only under %s (data %s, workspace %s)\n", root, m.data, ws)

	node, err := m.open(ctx, hub.Elect, "demo")
	if err != nil {
		return err
	}
	defer node.Close()
	info, _ := node.Hub()
	step("hub up: data %s, bus %s (127.0.0.1 only, token in hub.json)", m.data, info.URL)
	session, failed, err := demoMCP(ctx, m, node, ws, step)
	if err != nil {
		return err
	}
	step("burst: 4 goroutines, 40 requests of 12 events each, every request flushed (durable) before it counts")
	head, err := demoBurst(ctx, m, node)
	if err != nil {
		return err
	}
	step("verify: the hash chain from seq 1 to the head")
	if err := demoVerify(ctx, m, node, step); err != nil {
		return err
	}
	step("tamper: edit one byte of one event in a copy of the store, then verify the copy")
	if err := demoTamper(ctx, m, node, head); err != nil {
		return err
	}
	if err := demoRuns(ctx, m, step, session, failed, *artifacts); err != nil {
		return err
	}
	fmt.Fprintln(out, "\ndemo ok")
	if *keep {
		step("kept: %s (tracebridge --data %s runs); starting the workspace host and the operator UI", m.data, m.data)
		return demoKeep(ctx, m, ws)
	}
	return nil
}

// demoRoot is the directory the demo writes in, and only in: a temporary
// one (removed at the end unless kept), or --data DIR, which must not
// exist yet or be empty.
func demoRoot(m *Main, keep bool) (root string, cleanup func(), err error) {
	if m.data != "" {
		return m.data, func() {}, freshDir(m.data)
	}
	tmp, err := os.MkdirTemp("", "tracebridge-demo-")
	if err != nil {
		return "", nil, err
	}
	m.data = filepath.Join(tmp, "data")
	if keep {
		return tmp, func() {}, nil
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// demoBurst appends a burst of requests while following the log live, as
// `tracebridge tail -f` does, and returns the head once the follower saw it.
func demoBurst(ctx context.Context, m *Main, node *hub.Node) (uint64, error) {
	var seen atomic.Uint64
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	followed := make(chan error, 1)
	go func() {
		followed <- node.Follow(fctx, 1, func(e events.Event) error { seen.Store(e.Seq); return nil })
	}()
	em, err := m.emitter(hub.DataDir(m.data), node, m.logger())
	if err != nil {
		return 0, err
	}
	res, err := loadgen(ctx, em, loadConfig{Requests: 40, Events: 12, Concurrency: 4, AttrBytes: 32})
	if cerr := em.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	fmt.Fprintln(m.Stdout, res)
	head, _, err := node.Head(ctx)
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for seen.Load() < head && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stopFollow()
	<-followed
	if seen.Load() < head {
		return 0, fmt.Errorf("the live follower stopped at seq %d, short of the head %d", seen.Load(), head)
	}
	fmt.Fprintf(m.Stdout, "the live follower saw every event up to seq %d (head %d)\n", seen.Load(), head)
	return head, nil
}

// demoVerify verifies the chain and exports a signed checkpoint.
func demoVerify(ctx context.Context, m *Main, node *hub.Node, step func(string, ...any)) error {
	rep, err := node.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(m.Stdout, rep)
	cpFile := filepath.Join(m.data, "demo-checkpoint.json")
	cp, err := node.Checkpoint(ctx)
	if err != nil {
		return err
	}
	if err := store.WriteCheckpoint(cpFile, cp); err != nil {
		return err
	}
	step("checkpoint: seq %d signed with the data dir's ed25519 key, exported to %s", cp.Seq, cpFile)
	return nil
}

// demoTamper edits one byte of the event in the middle of a copy of the
// store (closing node to copy it whole) and shows verify naming it.
func demoTamper(ctx context.Context, m *Main, node *hub.Node, head uint64) error {
	victim, _, err := node.Range(ctx, head/2, 1)
	if err != nil || len(victim) == 0 {
		return fmt.Errorf("read seq %d: %v", head/2, err)
	}
	if err := node.Close(); err != nil { // release the store so it can be copied whole
		return err
	}
	broken, err := tamperedCopy(m.data, &victim[0])
	if err != nil {
		return err
	}
	st, err := store.Open(broken, store.Options{ReadOnly: true})
	if err != nil {
		return err
	}
	trep, err := st.Verify()
	st.Close()
	if err != nil {
		return err
	}
	fmt.Fprintf(m.Stdout, "edited seq %d in %s\nverify: %s\n", victim[0].Seq, broken, trep)
	if trep.OK() || trep.FirstBad != victim[0].Seq {
		return fmt.Errorf("verify did not name seq %d", victim[0].Seq)
	}
	return nil
}

// tamperedCopy copies the data dir's store and flips one byte inside every
// stored copy of e's record, as an editor would. Every copy, not the first
// found: the request index holds a covering copy whose place in the file
// depends on page layout, and verify reads the log first, so it names the
// edited record whichever copy comes first in the file.
func tamperedCopy(data string, e *events.Event) (string, error) {
	b, err := os.ReadFile(hub.DataDir(data).Store())
	if err != nil {
		return "", err
	}
	rec := events.Encode(e)
	found := false
	for off := 0; ; {
		i := bytes.Index(b[off:], rec)
		if i < 0 {
			break
		}
		found = true
		b[off+i+len(rec)/3] ^= 0x20
		off += i + len(rec)
	}
	if !found {
		return "", errors.New("record not found in the store file")
	}
	path := filepath.Join(data, "tampered-copy.db")
	return path, os.WriteFile(path, b, 0o600)
}

// demoRuns ends the demo as an operator would: the session's runs, the
// failed run replayed with its verdict and diagram, and its triad.
func demoRuns(ctx context.Context, m *Main, step func(string, ...any), session, failed events.ID, root string) error {
	node, err := m.openLog(ctx, "demo")
	if err != nil {
		return err
	}
	defer node.Close()
	step("tracebridge runs --session %s", session)
	rows, err := node.View(ctx, projections.Query{View: projections.ViewRuns, Session: session, Limit: 50})
	if err != nil {
		return err
	}
	if err := writeRuns(m.Stdout, rows, 0); err != nil {
		return err
	}

	step("tracebridge replay %s: the run that failed, judged against its expected chain", failed)
	evs, err := node.ByRequest(ctx, failed)
	if err != nil {
		return err
	}
	run := replay.Judge(failed, evs)
	if run.Status == replay.StatusOK {
		return fmt.Errorf("the run with the host stopped was judged ok")
	}
	v := run.Verdict
	fmt.Fprintf(m.Stdout, "status:  %s\nverdict: %s at %s (%s): %s\naction:  %s\n\n", run.Status, v.Code, v.Boundary, v.Kind, v.Message, v.Action)
	fmt.Fprint(m.Stdout, mermaid.Sequence(evs, mermaid.Options{}))

	if root == "" {
		if root, err = os.MkdirTemp("", "tracebridge-demo-triad-"); err != nil {
			return err
		}
	}
	t, err := export.WriteTriad(root, run, export.TriadOptions{Version: Version, Source: "log " + m.data})
	if err != nil {
		return err
	}
	step("triad written (tracebridge replay %s --artifacts %s)", failed, root)
	fmt.Fprintf(m.Stdout, "%s\n%s\n%s\n", t.Log, t.Metadata, t.Diagram)
	return nil
}

// freshDir makes dir, which must not exist yet or be an empty directory:
// the demo never writes among a user's files or into an existing log.
func freshDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return os.MkdirAll(dir, 0o700)
	case err != nil:
		return fmt.Errorf("demo --data %s: %w", dir, err)
	case len(entries) > 0:
		return fmt.Errorf("demo --data %s: the directory is not empty (%d entries); the demo needs a fresh one: name a new path, or leave --data out for a temporary one", dir, len(entries))
	}
	return os.Chmod(dir, 0o700)
}
