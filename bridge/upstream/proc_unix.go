//go:build unix && !linux

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts the child in a process group of its own, so stopping
// it ends what it started too.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group pid leads.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}

// killTagged: no /proc to find an upstream's escaped children by.
func killTagged(string) {}
