//go:build unix

package host

import (
	"syscall"
	"testing"
)

func mkfifo(t *testing.T, path string) {
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
}
