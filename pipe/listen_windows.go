//go:build windows

package pipe

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/tracebridge/tracebridge/events"

	"github.com/Microsoft/go-winio"
	"golang.org/x/sys/windows"
)

// Listener is a named pipe the host created and owns.
type Listener struct {
	ln   net.Listener
	path string
}

// currentUserSDDL is a security descriptor that grants the current user,
// and nobody else, full access: the named pipe's equivalent of a 0600
// socket in a 0700 directory.
func currentUserSDDL() (string, error) {
	tu, err := windows.GetCurrentProcessToken().GetTokenUser()
	if err != nil {
		return "", fmt.Errorf("current user: %w", err)
	}
	return "D:P(A;;GA;;;" + tu.User.Sid.String() + ")", nil
}

// Listen creates the named pipe at path (\\.\pipe\…) with a DACL that
// admits only the current user. A pipe that already exists is refused: the
// first creator owns it and is never displaced.
func Listen(path string) (*Listener, error) {
	sddl, err := currentUserSDDL()
	if err != nil {
		return nil, err
	}
	ln, err := winio.ListenPipe(path, &winio.PipeConfig{SecurityDescriptor: sddl, InputBufferSize: 64 << 10, OutputBufferSize: 64 << 10})
	if errors.Is(err, os.ErrExist) || errors.Is(err, windows.ERROR_ACCESS_DENIED) || errors.Is(err, windows.ERROR_PIPE_BUSY) {
		return nil, events.Errorf(events.CodeUnsafePath, "%s", fmt.Sprintf("a pipe %s already exists (another host, or a squatter); refusing to share it", path))
	}
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", path, err)
	}
	return &Listener{ln: ln, path: path}, nil
}

// Path is the pipe's name.
func (l *Listener) Path() string { return l.path }

// Close stops listening; the pipe disappears with its last handle.
func (l *Listener) Close() error { return l.ln.Close() }

func (l *Listener) accept() (net.Conn, error) { return l.ln.Accept() }

func (l *Listener) shutdown() { l.ln.Close() }

func dial(path string, timeout time.Duration) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	return winio.DialPipeContext(ctx, path)
}

// peerUID: the pipe's DACL admits only the current user, so every peer that
// connected is that user; Windows has no uid, and -1 is what os.Getuid
// reports there, so the default check passes for exactly those peers.
func peerUID(net.Conn) (int, error) { return os.Getuid(), nil }
