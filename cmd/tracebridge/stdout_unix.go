//go:build unix

package main

import (
	"os"

	"golang.org/x/sys/unix"
)

// protectStdout returns a duplicate of fd 1 for protocol frames and points
// fd 1 (and os.Stdout) at stderr, so that no other write in this process, or
// in a child that inherits fd 1, can reach the client.
func protectStdout() (*os.File, error) {
	fd, err := unix.Dup(1)
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	if err := unix.Dup2(2, 1); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return os.NewFile(uintptr(fd), "mcp-protocol"), nil
}
