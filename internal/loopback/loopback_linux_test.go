package loopback

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

func TestProcAddr(t *testing.T) {
	for _, tc := range []struct {
		addr *net.TCPAddr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 8080}, "0100007F:1F90"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 22}, "00000000000000000000000001000000:0016"},
	} {
		if got := procAddr(tc.addr); got != tc.want {
			t.Errorf("procAddr(%s) = %s, want %s", tc.addr, got, tc.want)
		}
	}
}

// H13: a process of another user (uid 65534, through setpriv) that holds
// the right credentials still gets nothing: its connection is closed
// before a byte is read, and the refusal is recorded ForeignPeer with its
// uid. Needs root, as CI runs.
func TestSameUserShutsOtherUsersOut(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid (CI runs as root)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Fatalf("setpriv (util-linux) is needed: %v", err)
	}
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Fatalf("curl is needed: %v", err)
	}
	addr, refused := serve(t, "tcp4", "127.0.0.1:0")
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", curl, "-s", "-m", "5", "-H", "Authorization: Bearer stolen", "http://"+addr+"/").CombinedOutput()
	if err == nil || strings.Contains(string(out), "ok") {
		t.Fatalf("uid 65534 was answered: %v %q", err, out)
	}
	deadline := time.Now().Add(5 * time.Second)
	for len(refused()) == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	rs := refused()
	if len(rs) != 1 || rs[0].Code != events.CodeForeignPeer || rs[0].Attrs.Get("uid") != "65534" {
		t.Fatalf("refusals recorded: %+v", rs)
	}
	// The same request from this user passes.
	if out, err := exec.Command(curl, "-s", "-m", "5", "http://"+addr+"/").CombinedOutput(); err != nil || string(out) != "ok" {
		t.Fatalf("this user: %v %q", err, out)
	}
}

// Both lookups find the same owner: sock_diag's exact lookup and the
// /proc/net/tcp scan it falls back to.
func TestPeerUIDLookupsAgree(t *testing.T) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	c, err := net.Dial("tcp4", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	la, ra := s.LocalAddr().(*net.TCPAddr), s.RemoteAddr().(*net.TCPAddr)
	d, derr := diagUID(ra, la)
	p, perr := procUID(ra, la)
	if derr != nil || perr != nil || d != os.Geteuid() || p != d {
		t.Fatalf("sock_diag %d (%v), /proc %d (%v), want %d", d, derr, p, perr, os.Geteuid())
	}
	if _, err := diagUID(&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}, la); !errors.Is(err, errNoSocket) {
		t.Fatalf("a socket that does not exist: %v", err)
	}
}

// BenchmarkPeerUID: the cost an accepted connection pays, by sock_diag and
// by the /proc/net/tcp scan (which grows with the machine's sockets).
func BenchmarkPeerUID(b *testing.B) {
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, _ := net.Dial("tcp4", l.Addr().String())
	defer c.Close()
	s, _ := l.Accept()
	defer s.Close()
	la, ra := s.LocalAddr().(*net.TCPAddr), s.RemoteAddr().(*net.TCPAddr)
	b.Run("sock_diag", func(b *testing.B) {
		for b.Loop() {
			if _, err := diagUID(ra, la); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("proc", func(b *testing.B) {
		for b.Loop() {
			if _, err := procUID(ra, la); err != nil {
				b.Fatal(err)
			}
		}
	})
}
