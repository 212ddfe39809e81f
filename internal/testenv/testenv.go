// Package testenv holds what several packages' tests need from the machine
// and from each other: the real gopls they drive, a buffer a child process
// and the test may share, a loopback port that takes connections.
package testenv

import (
	"bytes"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// GoplsVersion is the gopls the language tests are written against.
const GoplsVersion = "v0.23"

// Gopls is the gopls the language tests drive: $TB_GOPLS, else gopls in
// GOPATH/bin (where make test installs v0.23.0, .ci/deps), else on PATH.
// The tests fail, never skip, without it.
func Gopls(t testing.TB) string {
	t.Helper()
	candidates := []string{os.Getenv("TB_GOPLS")}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		candidates = append(candidates, filepath.Join(strings.TrimSpace(string(out)), "bin", "gopls"))
	}
	if p, err := exec.LookPath("gopls"); err == nil {
		candidates = append(candidates, p)
	}
	for _, c := range candidates {
		if c == "" {
			continue
		}
		if out, err := exec.Command(c, "version").Output(); err == nil && strings.Contains(string(out), GoplsVersion) {
			return c
		}
	}
	t.Fatal("gopls " + GoplsVersion + " is not installed: make test installs it (.ci/deps: go install golang.org/x/tools/gopls@v0.23.0), or set TB_GOPLS")
	return ""
}

// Buffer is a bytes.Buffer safe for a child process's output and the test
// reading it at once.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Listener accepts and closes connections on a loopback port until the
// test ends; it returns the port's host:port.
func Listener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return ln.Addr().String()
}
