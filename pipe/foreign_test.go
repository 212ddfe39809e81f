//go:build linux

package pipe

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

func TestMain(m *testing.M) {
	if path := os.Getenv("TB_FOREIGN_PIPE_CLIENT"); path != "" {
		foreignClient(path) // re-executed under another uid by TestForeignUIDIsRefused
		return
	}
	if path := os.Getenv("TB_FOREIGN_PIPE_SERVER"); path != "" {
		foreignServer(path) // re-executed under another uid by TestClientRefusesAForeignHost
		return
	}
	os.Exit(m.Run())
}

// foreignClient dials the socket, sends one request and prints what came
// back: "dial: …", "reply: …" or "closed".
func foreignClient(path string) {
	c, err := net.Dial("unix", path)
	if err != nil {
		fmt.Println("dial:", err)
		os.Exit(0)
	}
	c.Write([]byte(`{"v":1,"command":"echo","operationId":"foreign","payload":{"from":"another user"}}` + "\n"))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		fmt.Println("closed")
	} else {
		fmt.Println("reply:", strings.TrimSpace(line))
	}
	os.Exit(0)
}

// foreignServer is another user's fake host: a world-writable socket that
// prints whatever a client sends it.
func foreignServer(path string) {
	l, err := net.Listen("unix", path)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(1)
	}
	os.Chmod(path, 0o777)
	fmt.Println("listening")
	l.(*net.UnixListener).SetDeadline(time.Now().Add(10 * time.Second))
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			c.SetReadDeadline(time.Now().Add(3 * time.Second))
			if line, _ := bufio.NewReader(c).ReadString('\n'); line != "" {
				fmt.Printf("got: %s", line)
			}
		}()
	}
}

// TestClientRefusesAForeignHost: TRACEBRIDGE_HOST names a socket another
// user serves (0777 in a 0755 directory). The client checks who serves it
// and refuses with ForeignPeer before it sends anything.
func TestClientRefusesAForeignHost(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a server under another uid (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed: %v", err)
	}
	r := newRig(t, nil)
	dir := t.TempDir()
	for d := dir; d != "/tmp" && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o777)
	}
	bin := copyTestBinary(t, dir, "server")
	path := filepath.Join(dir, "host.sock")
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
	cmd.Env = append(os.Environ(), "TB_FOREIGN_PIPE_SERVER="+path)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(out)
	if !lines.Scan() || lines.Text() != "listening" {
		t.Fatalf("foreign server: %q", lines.Text())
	}
	c := NewClient(ClientOptions{Path: path, Recorder: r.em, Logger: quiet})
	defer c.Close()
	_, err = c.Call(context.Background(), Request{Command: "propose_text_edits", RequestID: r.em.NewID().String(),
		OperationID: r.em.NewID().String(), Payload: []byte(`{"files":[{"path":"a.go"}]}`)})
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodeForeignPeer || !strings.Contains(ce.Msg, "uid 65534") {
		t.Fatalf("a call to another user's socket: %v", err)
	}
	cmd.Process.Kill()
	cmd.Wait()
	var got []string
	for lines.Scan() {
		got = append(got, lines.Text())
	}
	if len(got) > 0 {
		t.Errorf("the foreign host received: %v", got)
	}
	if !r.foreignPeerRecorded(events.KindPipeUnavailable) {
		t.Fatal("no pipe.unavailable ForeignPeer event naming uid 65534")
	}
}

// A client running as another user: shut out by the 0700 directory, and,
// with the permissions opened on purpose, refused by the peer-uid check.
func TestForeignUIDIsRefused(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed: %v", err)
	}
	r := newRig(t, nil) // the default check: only our own uid
	binDir := t.TempDir()
	bin := copyTestBinary(t, binDir, "client")
	for d := binDir; d != "/tmp" && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	foreign := func() string {
		cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin)
		cmd.Env = append(os.Environ(), "TB_FOREIGN_PIPE_CLIENT="+r.path)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("foreign client: %v %s", err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if out := foreign(); !strings.HasPrefix(out, "dial:") || !strings.Contains(out, "permission denied") {
		t.Fatalf("a foreign uid reached the socket through its 0700 directory: %s", out)
	}
	// Open the way on purpose: now only the peer check stands.
	for d := filepath.Dir(r.path); d != "/tmp" && d != "/"; d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	os.Chmod(r.path, 0o666)
	if out := foreign(); out != "closed" {
		t.Fatalf("a foreign uid got an answer: %s", out)
	}
	if !r.foreignPeerRecorded(events.KindHostReceived) {
		t.Fatal("no ForeignPeer event naming uid 65534")
	}
}

// copyTestBinary copies this test binary to dir/name, where another uid can
// run it (the original sits in a 0700 build dir).
func copyTestBinary(t *testing.T, dir, name string) string {
	t.Helper()
	self, _ := os.Executable()
	bin := filepath.Join(dir, name)
	src, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer dst.Close()
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	return bin
}

// foreignPeerRecorded reports whether the log holds a kind event with code
// ForeignPeer naming uid 65534.
func (r *rig) foreignPeerRecorded(kind string) bool {
	r.em.FlushAll(context.Background())
	all, _ := r.st.Range(1, 1000)
	for _, e := range all {
		if e.Kind == kind && e.Code == events.CodeForeignPeer && e.Attrs.Get("uid") == "65534" {
			return true
		}
	}
	return false
}
