//go:build linux

package pipe

import (
	"bufio"
	"context"
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
	self, _ := os.Executable()
	binDir := t.TempDir()
	bin := filepath.Join(binDir, "client")
	src, _ := os.Open(self)
	dst, _ := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	io.Copy(dst, src)
	src.Close()
	dst.Close()
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
	r.em.FlushAll(context.Background())
	all, _ := r.st.Range(1, 1000)
	for _, e := range all {
		if e.Kind == events.KindHostReceived && e.Code == events.CodeForeignPeer && e.Attrs["uid"] == "65534" {
			return
		}
	}
	t.Fatal("no ForeignPeer event naming uid 65534")
}
