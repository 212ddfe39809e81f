package upstream

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
)

// setProcAttrs puts the child in a process group of its own (so stopping
// it ends what it started too) and makes it die with the bridge (a bridge
// killed with SIGKILL leaves no orphaned upstream holding resources).
// A grandchild that leaves the group (setsid) is still found by the tag in
// its environment (killTagged); one that also clears its environment
// escapes, as does anything left when the bridge itself is SIGKILLed: only
// a cgroup would hold those.
func setProcAttrs(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}

// killGroup kills the process group pid leads: the upstream and whatever
// it started that stayed in its group. Harmless when none is left.
func killGroup(pid int) {
	syscall.Kill(-pid, syscall.SIGKILL)
}

// killTagged kills every process of this user whose environment holds
// tag (TRACEBRIDGE_UPSTREAM=…, which an upstream's children inherit): what
// an upstream started and moved out of its process group.
func killTagged(tag string) {
	if tag == "" {
		return
	}
	want := []byte(tag)
	me := os.Getpid()
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil || pid == me {
			continue
		}
		env, err := os.ReadFile(filepath.Join(d, "environ"))
		if err != nil {
			continue
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if bytes.Equal(kv, want) {
				syscall.Kill(pid, syscall.SIGKILL)
				break
			}
		}
	}
}
