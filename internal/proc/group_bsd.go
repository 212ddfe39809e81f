//go:build unix && !linux

package proc

import (
	"os/exec"
	"syscall"
)

// OwnGroup makes cmd's process lead a process group of its own, so
// KillGroup ends what it started too.
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
