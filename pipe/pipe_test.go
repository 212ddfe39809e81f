//go:build unix

package pipe

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/storetest"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// rig is a host serving echo/slow/fail on a socket in a private directory,
// recording through a real emitter and store.
type rig struct {
	path string
	st   *store.Store
	em   *events.Emitter
	l    *Listener
	stop context.CancelFunc
	done chan error
}

func newRig(t testing.TB, check func(int) error) *rig {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	r := &rig{path: filepath.Join(dir, "host.sock")}
	log := storetest.Open(t)
	r.st, r.em = log.Store, log.Emitter
	r.start(t, check)
	return r
}

func (r *rig) start(t testing.TB, check func(int) error) {
	t.Helper()
	l, err := Listen(r.path)
	if err != nil {
		t.Fatal(err)
	}
	r.l = l
	srv := NewServer(ServerOptions{Recorder: r.em, Logger: quiet, CheckPeer: check, Handlers: map[string]Handler{
		"echo": func(_ context.Context, req Request) (any, error) { return json.RawMessage(req.Payload), nil },
		"slow": func(ctx context.Context, req Request) (any, error) {
			<-ctx.Done() // never answers while the host runs
			return "late", nil
		},
		"fail": func(context.Context, Request) (any, error) {
			return nil, &events.Err{Code: events.CodeDrift, Msg: "file changed"}
		},
	}})
	ctx, stop := context.WithCancel(context.Background())
	r.stop, r.done = stop, make(chan error, 1)
	go func() { r.done <- srv.Serve(ctx, l) }()
	t.Cleanup(r.shutdown)
}

func (r *rig) shutdown() {
	if r.stop != nil {
		r.stop()
		<-r.done
		r.l.Close()
		r.stop = nil
	}
}

func (r *rig) client(timeout time.Duration) *Client {
	return NewClient(ClientOptions{Path: r.path, Recorder: r.em, Timeout: timeout, Logger: quiet})
}

func (r *rig) kinds(t *testing.T, req string) []string {
	t.Helper()
	r.em.FlushAll(context.Background())
	evs, _ := r.st.ByRequest(events.ID(parseID(req)))
	var out []string
	for _, e := range evs {
		k := e.Kind
		if e.Code != "" {
			k += "(" + string(e.Code) + ")"
		}
		out = append(out, k)
	}
	return out
}

func request(cmd, payload string) Request {
	return Request{Command: cmd, RequestID: events.NewID().String(), OperationID: events.NewID().String(), Payload: json.RawMessage(payload),
		Traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
}

func TestRoundTripsMultiplexOverOneConnection(t *testing.T) {
	r := newRig(t, nil)
	c := r.client(5 * time.Second)
	defer c.Close()
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Go(func() {
			req := request("echo", fmt.Sprintf(`{"n":%d}`, i))
			resp, err := c.Call(context.Background(), req)
			if err != nil || !resp.OK || string(resp.Payload) != fmt.Sprintf(`{"n":%d}`, i) || resp.OperationID != req.OperationID {
				t.Errorf("call %d: %+v %v", i, resp, err)
			}
		})
	}
	wg.Wait()
	req := request("fail", `{}`)
	resp, err := c.Call(context.Background(), req)
	if err != nil || resp.OK || resp.Code != events.CodeDrift {
		t.Fatalf("coded failure: %+v %v", resp, err)
	}
	want := "pipe.attempt pipe.connected pipe.request.sent host.request.received host.dispatched host.response.sent(Drift) pipe.response.received(Drift)"
	if got := strings.Join(r.kinds(t, req.RequestID), " "); got != want {
		t.Fatalf("events:\n got %s\nwant %s", got, want)
	}
	fi, _ := os.Stat(r.path)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v", fi.Mode().Perm())
	}
}

// rawConn writes frames by hand and reads answers.
func rawConn(t *testing.T, path string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReaderSize(c, MaxFrame)
}

func TestBadFramesFailClosed(t *testing.T) {
	r := newRig(t, nil)
	c, rd := rawConn(t, r.path)
	for _, tc := range []struct {
		frame string
		code  events.Code
	}{
		{`not json`, events.CodeMalformedEnvelope},
		{`{"v":1,"command":"echo","requestId":"r","operationId":"o1","extra":1}`, events.CodeMalformedEnvelope},
		{`{"v":2,"command":"echo","operationId":"o2"}`, events.CodeMalformedEnvelope},
		{`{"v":1,"command":"echo"}`, events.CodeMalformedEnvelope},
		{`{"v":1,"command":"","operationId":"o3"}`, events.CodeUnknownCommand},
		{`{"v":1,"command":"rm -rf","operationId":"o4"}`, events.CodeUnknownCommand},
		{`{"v":1,"command":"echo","operationId":"o5","payload":{"still":"works"}}`, ""},
	} {
		c.Write([]byte(tc.frame + "\n"))
		line, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatalf("%s: %v", tc.frame, err)
		}
		resp, err := decodeResponse(line)
		if tc.code == "" {
			if err != nil || !resp.OK {
				t.Fatalf("the connection did not survive the bad frames: %s", line)
			}
			continue
		}
		if resp.OK || resp.Code != tc.code {
			t.Fatalf("%s: answered %s, want %s", tc.frame, line, tc.code)
		}
	}
	// An oversized frame is refused and the connection closed.
	c.Write(append([]byte(`{"v":1,"command":"echo","operationId":"big","payload":"`), make([]byte, MaxFrame)...))
	line, _ := rd.ReadBytes('\n')
	if !strings.Contains(string(line), string(events.CodeTooLarge)) {
		t.Fatalf("oversized frame answered %q", line)
	}
	if _, err := rd.ReadBytes('\n'); err == nil {
		t.Fatal("the connection stayed open after an oversized frame")
	}
}

func TestForeignPeerIsRefusedAndRecorded(t *testing.T) {
	r := newRig(t, func(uid int) error {
		if uid != os.Getuid() {
			t.Errorf("peer uid %d, want ours %d", uid, os.Getuid())
		}
		return errors.New("uid not allowed (test)")
	})
	c := r.client(time.Second)
	_, err := c.Call(context.Background(), request("echo", `{}`))
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodePipeUnavailable {
		t.Fatalf("call from a refused peer: %v", err)
	}
	r.em.FlushAll(context.Background())
	all, _ := r.st.Range(1, 1000)
	found := false
	for _, e := range all {
		found = found || (e.Kind == events.KindHostReceived && e.Code == events.CodeForeignPeer)
	}
	if !found {
		t.Fatal("no ForeignPeer event")
	}
}

func TestMissingHostIsImmediateAndSaysWhatToStart(t *testing.T) {
	em := storetest.Open(t).Emitter
	path := filepath.Join(t.TempDir(), "nobody.sock")
	c := NewClient(ClientOptions{Path: path, Recorder: em, Timeout: 5 * time.Second, Logger: quiet})
	t0 := time.Now()
	_, err := c.Call(context.Background(), request("echo", `{}`))
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodePipeUnavailable || !strings.Contains(ce.Msg, "tracebridge up --root") || !strings.Contains(ce.Msg, path) {
		t.Fatalf("missing host: %v", err)
	}
	if time.Since(t0) > 2*time.Second {
		t.Fatalf("took %v: it waited instead of failing at once", time.Since(t0))
	}
}

func TestTimeoutAndReconnect(t *testing.T) {
	r := newRig(t, nil)
	// Long enough that a loaded CI machine answers echo in time; slow never answers.
	c := r.client(2 * time.Second)
	defer c.Close()
	req := request("slow", `{}`)
	_, err := c.Call(context.Background(), req)
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodePipeTimeout {
		t.Fatalf("slow call: %v", err)
	}
	// The host restarts on the same path: the next call reconnects.
	r.shutdown()
	if _, err := c.Call(context.Background(), request("echo", `{}`)); err == nil {
		t.Fatal("a call to a stopped host succeeded")
	}
	r.start(t, nil)
	resp, err := c.Call(context.Background(), request("echo", `{"back":true}`))
	if err != nil || !resp.OK {
		t.Fatalf("after the host restarted: %+v %v", resp, err)
	}
}

func TestListenRefusesUnsafePaths(t *testing.T) {
	t.Run("squatted by a file", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		os.MkdirAll(dir, 0o700)
		path := filepath.Join(dir, "host.sock")
		os.WriteFile(path, []byte("not yours"), 0o600)
		var pe *events.Err
		if _, err := Listen(path); !errors.As(err, &pe) {
			t.Fatalf("Listen over a file: %v", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "not yours" {
			t.Fatal("the squatting file was touched")
		}
	})
	t.Run("permissive directory", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		os.MkdirAll(dir, 0o755)
		os.Chmod(dir, 0o755)
		var pe *events.Err
		if _, err := Listen(filepath.Join(dir, "host.sock")); !errors.As(err, &pe) || !strings.Contains(err.Error(), "chmod 700") {
			t.Fatalf("Listen in a 0755 dir: %v", err)
		}
	})
	t.Run("a live host", func(t *testing.T) {
		r := newRig(t, nil)
		var pe *events.Err
		if _, err := Listen(r.path); !errors.As(err, &pe) || !strings.Contains(err.Error(), "already listens") {
			t.Fatalf("second Listen: %v", err)
		}
		if c := r.client(time.Second); func() error { _, err := c.Call(context.Background(), request("echo", `{}`)); return err }() != nil {
			t.Fatal("the first host's socket was disturbed")
		}
	})
	t.Run("a foreign stale socket", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		os.MkdirAll(dir, 0o700)
		path := filepath.Join(dir, "host.sock")
		l, _ := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		l.SetUnlinkOnClose(false)
		l.Close() // a dead socket no host of ours recorded
		var pe *events.Err
		if _, err := Listen(path); !errors.As(err, &pe) {
			t.Fatalf("Listen over a foreign stale socket: %v", err)
		}
		if _, err := os.Lstat(path); err != nil {
			t.Fatal("a socket this host did not create was removed")
		}
	})
	t.Run("our own stale socket is replaced", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "run")
		path := filepath.Join(dir, "host.sock")
		l, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		// Simulate a crash: the socket and its record stay behind, with a
		// pid that is no longer alive.
		l.UnixListener.Close()
		b, _ := os.ReadFile(path + ".owner")
		os.WriteFile(path+".owner", []byte(strings.Replace(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid()), `"pid":2147483646`, 1)), 0o600)
		l2, err := Listen(path)
		if err != nil {
			t.Fatalf("Listen over our stale socket: %v", err)
		}
		l2.Close()
	})
}

func FuzzDecodeRequest(f *testing.F) {
	f.Add([]byte(`{"v":1,"command":"echo","requestId":"r","operationId":"o","payload":{"a":1}}`))
	f.Add([]byte(`{"v":1,"command":"","operationId":"o"}`))
	f.Add([]byte(`[]`))
	cmds := map[string]bool{"echo": true}
	f.Fuzz(func(t *testing.T, b []byte) {
		req, err := decodeRequest(b, cmds)
		if err != nil {
			var fe *events.Err
			if !errors.As(err, &fe) || fe.Code == "" {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		if req.V != Version || !cmds[req.Command] || req.OperationID == "" {
			t.Fatalf("accepted %+v", req)
		}
	})
}

// Every answer the bridge accepts from a host is an envelope it can act
// on: a refusal carries a code of the table (one without is the host's
// fault, and says so), and whatever is refused carries a code.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte(`{"v":1,"operationId":"o","ok":true,"payload":{"a":1}}`))
	f.Add([]byte(`{"v":1,"operationId":"o","ok":false,"code":"Drift","message":"changed"}`))
	f.Add([]byte(`{"v":1,"operationId":"o","ok":false}`))
	f.Add([]byte(`{"v":1,"operationId":"o","ok":false,"code":"NoSuchCode"}`))
	f.Add([]byte(`{"v":2}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		resp, err := decodeResponse(b)
		if err != nil {
			if events.CodeOf(err) == "" {
				t.Fatalf("uncoded error %v", err)
			}
			return
		}
		if resp.V != Version || resp.OperationID == "" || !resp.OK && !events.Known(resp.Code) {
			t.Fatalf("accepted %+v", resp)
		}
	})
}

// A host that refuses without a code, or with one tracebridge does not
// know, answers its caller MalformedEnvelope naming what it sent.
func TestARefusalWithoutACodeIsTheHostsFault(t *testing.T) {
	for _, in := range []string{`{"v":1,"operationId":"o","ok":false}`, `{"v":1,"operationId":"o","ok":false,"code":"Nope","message":"m"}`} {
		resp, err := decodeResponse([]byte(in))
		if err != nil || resp.Code != events.CodeMalformedEnvelope || !strings.Contains(resp.Message, "without a known code") {
			t.Errorf("%s: %+v %v", in, resp, err)
		}
	}
	resp, err := decodeResponse([]byte(`{"v":1,"operationId":"o","ok":false,"code":"Drift","message":"changed"}`))
	if err != nil || resp.Code != events.CodeDrift || resp.Message != "changed" {
		t.Errorf("a coded refusal: %+v %v", resp, err)
	}
}

// Frames as long as the log keeps whole (8 MiB here) pass both ways; the
// reader's memory grows with the frame, not with the cap.
func TestLongFramesPass(t *testing.T) {
	r := newRig(t, nil)
	c := r.client(30 * time.Second)
	defer c.Close()
	big := fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 8<<20))
	resp, err := c.Call(context.Background(), request("echo", big))
	if err != nil || !resp.OK || len(resp.Payload) != len(big) {
		t.Fatalf("an 8 MiB frame: ok=%v %d bytes back, %v", resp.OK, len(resp.Payload), err)
	}
}
