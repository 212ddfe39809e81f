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
	"github.com/tracebridge/tracebridge/events/hub"
	"github.com/tracebridge/tracebridge/store"
)

func runDemo(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("demo")
	keep := fs.Bool("keep", false, "keep the demo's data dir (printed at the end) instead of removing it")
	if err := m.parse(fs, "demo [--data DIR] [--keep]\n\nStarts a hub on a fresh data dir (a temporary one unless --data is given),\ndrives a scripted MCP session through `tracebridge mcp` (a success, a policy\ndenial, an unknown tool, bad arguments) and prints one call's evidence,\nappends a burst of requests while following them live, verifies the chain,\nexports a signed checkpoint, and shows verify catching a byte edited in a copy\nof the store.", args); err != nil {
		return err
	}
	if m.data == "" {
		tmp, err := os.MkdirTemp("", "tracebridge-demo-")
		if err != nil {
			return err
		}
		m.data = filepath.Join(tmp, "data")
		if !*keep {
			defer os.RemoveAll(tmp)
		}
	}
	out := m.Stdout
	step := func(format string, args ...any) { fmt.Fprintf(out, "\n== "+format+"\n", args...) }

	node, err := m.open(ctx, hub.Elect, "demo")
	if err != nil {
		return err
	}
	defer node.Close()
	info, _ := node.Hub()
	step("hub up: data %s, bus %s (127.0.0.1 only, token in hub.json)", m.data, info.URL)

	// Follow the log live while the burst runs, as `tracebridge tail` does.
	var seen atomic.Uint64
	fctx, stopFollow := context.WithCancel(ctx)
	defer stopFollow()
	followed := make(chan error, 1)
	go func() {
		followed <- node.Follow(fctx, 1, func(e events.Event) error { seen.Store(e.Seq); return nil })
	}()

	if err := demoMCP(ctx, m, node, step); err != nil {
		return err
	}

	step("burst: 4 goroutines, 40 requests of 12 events each, every request flushed (durable) before it counts")
	em := events.NewEmitter(node, events.EmitterOptions{Logger: m.logger()})
	res, err := loadgen(ctx, em, loadConfig{Requests: 40, Events: 12, Concurrency: 4, AttrBytes: 32})
	if cerr := em.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(out, res)

	head, _, err := node.Head(ctx)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for seen.Load() < head && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stopFollow()
	<-followed
	if seen.Load() < head {
		return fmt.Errorf("the live follower stopped at seq %d, short of the head %d", seen.Load(), head)
	}
	fmt.Fprintf(out, "the live follower saw every event up to seq %d (head %d)\n", seen.Load(), head)

	step("verify: the hash chain from seq 1 to the head")
	rep, err := node.Verify(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, rep)

	cpFile := filepath.Join(m.data, "demo-checkpoint.json")
	cp, err := node.Checkpoint(ctx)
	if err != nil {
		return err
	}
	if err := store.WriteCheckpoint(cpFile, cp); err != nil {
		return err
	}
	step("checkpoint: seq %d signed with the data dir's ed25519 key, exported to %s", cp.Seq, cpFile)

	step("tamper: edit one byte of one event in a copy of the store, then verify the copy")
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
	fmt.Fprintf(out, "edited seq %d in %s\nverify: %s\n", victim[0].Seq, broken, trep)
	if trep.OK() || trep.FirstBad != victim[0].Seq {
		return fmt.Errorf("verify did not name seq %d", victim[0].Seq)
	}
	if *keep {
		step("kept: tracebridge --data %s tail -n 20", m.data)
	}
	fmt.Fprintln(out, "\ndemo ok")
	return nil
}

// tamperedCopy copies the data dir's store and flips one byte inside the
// stored record of e, as a disk error or an editor would.
func tamperedCopy(data string, e *events.Event) (string, error) {
	b, err := os.ReadFile(hub.DataDir(data).Store())
	if err != nil {
		return "", err
	}
	rec := events.Encode(e)
	i := bytes.Index(b, rec)
	if i < 0 {
		return "", errors.New("record not found in the store file")
	}
	b[i+len(rec)/3] ^= 0x20
	path := filepath.Join(data, "tampered-copy.db")
	return path, os.WriteFile(path, b, 0o600)
}
