package proc

import (
	"os/exec"
	"syscall"
)

// OwnGroup makes cmd's process lead a process group of its own (so
// KillGroup ends what it started too) and die with this process (one
// killed with SIGKILL leaves no orphaned child holding resources).
func OwnGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
