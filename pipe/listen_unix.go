//go:build unix

package pipe

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/tracebridge/tracebridge/events"

	"golang.org/x/sys/unix"
)

// owner records who created a socket, so a later host may remove the socket
// only if it is provably a stale one of ours.
type owner struct {
	PID int    `json:"pid"`
	Ino uint64 `json:"ino"`
}

// Listener is a Unix socket the host created and owns.
type Listener struct {
	*net.UnixListener
	path string
	ino  uint64
}

// Listen creates the socket at path. The directory is created 0700 if
// missing and must not be open to others; the socket is 0600. An existing
// path is refused (squatted, or another host listens) unless it is a stale
// socket this user's host created earlier, which is then replaced.
func Listen(path string) (*Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return nil, err
	}
	st := fi.Sys().(*syscall.Stat_t)
	switch {
	case !fi.IsDir():
		return nil, events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("%s is not a directory", dir))
	case int(st.Uid) != os.Getuid():
		return nil, events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("directory %s belongs to uid %d, not to you", dir, st.Uid))
	case fi.Mode().Perm()&0o077 != 0:
		return nil, events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("directory %s has mode %v; others could reach the socket (chmod 700 %s)", dir, fi.Mode().Perm(), dir))
	}
	if err := clearStale(path); err != nil {
		return nil, err
	}
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	l.SetUnlinkOnClose(false) // Close unlinks only if the file is still ours
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	sfi, err := os.Lstat(path)
	if err != nil {
		l.Close()
		return nil, err
	}
	ino := sfi.Sys().(*syscall.Stat_t).Ino
	b, _ := json.Marshal(owner{PID: os.Getpid(), Ino: ino})
	if err := os.WriteFile(path+".owner", b, 0o600); err != nil {
		l.Close()
		return nil, err
	}
	return &Listener{UnixListener: l, path: path, ino: ino}, nil
}

// clearStale makes path free, or says why it will not.
func clearStale(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode().Type() != os.ModeSocket {
		return events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("%s exists and is not a socket (%v); refusing to touch it", path, fi.Mode().Type()))
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("a host already listens at %s", path))
	}
	var o owner
	b, err := os.ReadFile(path + ".owner")
	if err != nil || json.Unmarshal(b, &o) != nil {
		return events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("%s exists but no host of yours recorded creating it; remove it yourself if it is stale", path))
	}
	ino := fi.Sys().(*syscall.Stat_t).Ino
	if o.Ino != ino || unix.Kill(o.PID, 0) == nil {
		return events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("%s is not the stale socket its owner record names (or its host still runs)", path))
	}
	if err := os.Remove(path); err != nil {
		return err
	}
	os.Remove(path + ".owner")
	return nil
}

// Path is where the socket is.
func (l *Listener) Path() string { return l.path }

// Close stops listening and removes the socket and its owner record, if
// the socket is still the one this listener created.
func (l *Listener) Close() error {
	err := l.UnixListener.Close()
	if fi, serr := os.Lstat(l.path); serr == nil && fi.Sys().(*syscall.Stat_t).Ino == l.ino {
		os.Remove(l.path)
		os.Remove(l.path + ".owner")
	}
	return err
}

func (l *Listener) accept() (net.Conn, error) { return l.UnixListener.Accept() }

func (l *Listener) shutdown() { l.UnixListener.Close() }

func dial(path string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("unix", path, timeout)
}

// peerUID returns the uid of the process on the other end of c.
func peerUID(nc net.Conn) (int, error) {
	c, ok := nc.(*net.UnixConn)
	if !ok {
		return -1, fmt.Errorf("not a Unix socket connection")
	}
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid := -1
	var cerr error
	if err := raw.Control(func(fd uintptr) { uid, cerr = fdPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, cerr
}
