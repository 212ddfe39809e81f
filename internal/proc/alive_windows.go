package proc

import "os"

// Alive reports whether a process with pid exists (FindProcess opens
// it on Windows, which fails when it is gone).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
