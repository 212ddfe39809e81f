//go:build unix

package proc

import "syscall"

// Alive reports whether a process with pid exists.
func Alive(pid int) bool {
	return pid > 0 && syscall.Kill(pid, 0) == nil
}
