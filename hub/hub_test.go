package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tracebridge/tracebridge/events"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func open(t *testing.T, dir DataDir, role Role) *Node {
	t.Helper()
	n, err := Open(context.Background(), Options{Dir: dir, Role: role, Logger: quiet, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n
}

func newDir(t *testing.T) DataDir { return DataDir(filepath.Join(t.TempDir(), "data")) }

func evt(req events.ID, i int) events.Event {
	return events.Event{
		ID: events.NewID(), Time: time.Now().UTC(), Kind: events.KindToolCompleted, Boundary: events.BoundaryTool,
		RequestID: req, Outcome: events.OK, Attrs: events.A("i", fmt.Sprint(i)),
	}
}

// busConn is a raw connection to dir's hub, as another process of the
// user would make (hub.json's URL and token).
func busConn(t *testing.T, dir DataDir) *nats.Conn {
	t.Helper()
	info, err := dir.readInfo()
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(info.URL, nats.Token(info.Token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// eventually polls cond until it holds or 10s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestSecondNodeAttachesAndAppendsThroughTheHub(t *testing.T) {
	dir := newDir(t)
	a := open(t, dir, Elect)
	b := open(t, dir, Elect)
	if !a.IsHub() || b.IsHub() {
		t.Fatalf("a.IsHub=%v b.IsHub=%v, want the first to be the hub", a.IsHub(), b.IsHub())
	}
	fi, err := os.Stat(dir.HubFile())
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("hub.json: %v mode %v, want 0600", err, fi.Mode())
	}
	info, _ := dir.readInfo()
	if !strings.HasPrefix(info.URL, "nats://127.0.0.1:") {
		t.Fatalf("hub listens on %s, want 127.0.0.1", info.URL)
	}
	req := events.NewID()
	seqs, err := b.Append(context.Background(), []events.Event{evt(req, 1), evt(req, 2)})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.ByRequest(context.Background(), req)
	if err != nil || len(got) != 2 || got[0].Seq != seqs[0] || got[1].Attrs.Get("i") != "2" {
		t.Fatalf("hub sees %+v, %v", got, err)
	}
	got, err = b.ByRequest(context.Background(), req)
	if err != nil || len(got) != 2 {
		t.Fatalf("attached node reads %d events, %v", len(got), err)
	}
}

func TestHubDeathReelectsAndLosesNothing(t *testing.T) {
	dir := newDir(t)
	a, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	b := open(t, dir, Elect)
	em := events.NewEmitter(b, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	req := events.NewID()
	var ids []events.ID
	for i := 0; i < 50; i++ {
		ids = append(ids, em.Emit(evt(req, i)))
		if i == 20 {
			if err := em.Flush(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if err := a.Close(); err != nil { // the hub goes away mid-stream
				t.Fatal(err)
			}
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := em.Flush(ctx, req); err != nil {
		t.Fatal(err)
	}
	if !b.IsHub() {
		t.Fatal("the surviving node did not become the hub")
	}
	got, err := b.ByRequest(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 50 {
		t.Fatalf("%d events stored, want 50", len(got))
	}
	for i, e := range got {
		if e.ID != ids[i] {
			t.Fatalf("event %d is %s, want %s (order or duplicates)", i, e.ID, ids[i])
		}
	}
	rep, err := b.Verify(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("verify after handover: %v %v", rep, err)
	}
}

func TestBadRequestsOnTheBusGetCodedErrors(t *testing.T) {
	dir := newDir(t)
	a := open(t, dir, Elect)
	nc := busConn(t, dir)
	bad := evt(events.NewID(), 1)
	bad.Kind = "not.a.kind"
	tests := []struct {
		name, subj string
		data       []byte
		code       events.Code
	}{
		{"garbage", subjAppend, []byte("{not a frame"), events.CodeMalformedAppend},
		{"empty", subjAppend, nil, events.CodeMalformedAppend},
		{"count lies", subjAppend, []byte{1, 0xff, 0xff, 0x03}, events.CodeMalformedAppend},
		{"oversized", subjAppend, make([]byte, events.MaxBatchBytes+1), events.CodeTooLarge},
		{"unknown kind", subjAppend, events.EncodeBatch([]events.Event{bad}), events.CodeInvalidEvent},
		{"unknown query", "tb.q.nope", nil, events.CodeUnknownQuery},
		{"bad query json", subjRange, []byte("{"), events.CodeMalformedQuery},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, err := nc.Request(tc.subj, tc.data, 5*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var rej *events.Err
			if err := replyError(m); !errors.As(err, &rej) || rej.Code != tc.code {
				t.Fatalf("reply error %v, want code %s", err, tc.code)
			}
		})
	}
	// The hub still works, and each rejection is on record with its code.
	head, _, err := a.Head(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	all, _, err := a.Range(context.Background(), 1, int(head))
	if err != nil {
		t.Fatal(err)
	}
	rejected := map[events.Code]int{}
	for _, e := range all {
		if e.Kind == events.KindAppendRejected {
			rejected[e.Code]++
		}
	}
	for _, tc := range tests {
		if rejected[tc.code] == 0 {
			t.Errorf("no %s event for %s", events.KindAppendRejected, tc.code)
		}
	}
}

func TestFollowDeliversInOrderAcrossAHandover(t *testing.T) {
	dir := newDir(t)
	a, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	writer := open(t, dir, Elect)
	reader := open(t, dir, Read)
	if _, err := writer.Append(context.Background(), []events.Event{evt(events.NewID(), 0)}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var seqs []uint64
	done := make(chan error, 1)
	go func() {
		done <- reader.Follow(ctx, 1, func(e events.Event) error {
			mu.Lock()
			defer mu.Unlock()
			seqs = append(seqs, e.Seq)
			return nil
		})
	}()
	req := events.NewID()
	for i := 0; i < 30; i++ {
		if i == 10 {
			a.Close()
		}
		if _, err := writer.Append(context.Background(), []events.Event{evt(req, i)}); err != nil {
			// The first append after the hub left may fail once; the
			// emitter would retry, so do the same.
			if _, err := writer.Append(context.Background(), []events.Event{evt(req, i)}); err != nil {
				t.Fatal(err)
			}
		}
	}
	head, _, _ := writer.Head(context.Background())
	eventually(t, "follower to reach the head", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seqs) > 0 && seqs[len(seqs)-1] == head
	})
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	for i, s := range seqs {
		if s != uint64(i+1) {
			t.Fatalf("follower saw seqs %v: not 1..%d in order", seqs, head)
		}
	}
}

func TestReadNodeOpensTheStoreWhenNoHubRuns(t *testing.T) {
	dir := newDir(t)
	w, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	w.Append(context.Background(), []events.Event{evt(events.NewID(), 1)})
	w.Close()
	r := open(t, dir, Read)
	if r.IsHub() || r.Online() {
		t.Fatal("a Read node became or found a hub")
	}
	rep, err := r.Verify(context.Background())
	if err != nil || !rep.OK() || rep.Events < 2 {
		t.Fatalf("offline verify: %v %v", rep, err)
	}
	_, err = r.Append(context.Background(), []events.Event{evt(events.NewID(), 2)})
	var rej *events.Err
	if !errors.As(err, &rej) || rej.Code != events.CodeLogUnavailable {
		t.Fatalf("append on a read-only node: %v", err)
	}
	if _, err := os.Stat(dir.HubFile()); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("hub.json left behind after a clean close: %v", err)
	}
}

func TestDataDirMustBePrivate(t *testing.T) {
	dir := DataDir(t.TempDir())
	os.Chmod(string(dir), 0o755)
	_, err := Open(context.Background(), Options{Dir: dir, Logger: quiet})
	if err == nil || !strings.Contains(err.Error(), "chmod 700") {
		t.Fatalf("open of a 0755 data dir: %v", err)
	}
}
