//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach starts c in a session of its own: out of its parent's process
// group, as a daemonizing child does.
func detach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }
