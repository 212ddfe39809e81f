package main

import "os"

// processAlive reports whether a process with pid exists (FindProcess opens
// it on Windows, which fails when it is gone).
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	p.Release()
	return true
}
