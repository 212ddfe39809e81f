package upstream

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// killTagged kills every process of this user whose environment holds
// tag (TRACEBRIDGE_UPSTREAM=…, which an upstream's children inherit): what
// an upstream started and moved out of its process group (setsid). One
// that also clears its environment escapes, as does anything left when
// the bridge itself is SIGKILLed: only a cgroup would hold those.
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
