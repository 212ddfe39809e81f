package upstream

import (
	"os/exec"
	"syscall"
)

// setProcAttrs puts the child in a process group of its own (so stopping
// it ends what it started too) and makes it die with the bridge (a bridge
// killed with SIGKILL leaves no orphaned upstream holding resources).
// A grandchild that leaves the group (setsid) escapes both; only a cgroup
// would hold it.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the process group pid leads: the upstream and whatever
// it started that stayed in its group. Harmless when none is left.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}
