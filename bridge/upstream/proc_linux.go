package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttrs makes the child die with the bridge (a bridge killed with
// SIGKILL leaves no orphaned upstream holding resources).
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
