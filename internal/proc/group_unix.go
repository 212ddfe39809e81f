//go:build unix

package proc

import "syscall"

// KillGroup kills the process group pid leads: the process and whatever
// it started that stayed in its group. Harmless when none is left.
func KillGroup(pid int) {
	if pid > 0 {
		syscall.Kill(-pid, syscall.SIGKILL)
	}
}
