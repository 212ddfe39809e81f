package proc

import (
	"os"
	"os/exec"
	"testing"
)

// This process is alive; one that exited and was reaped is not; no pid is.
func TestAlive(t *testing.T) {
	if !Alive(os.Getpid()) {
		t.Fatal("this process is not alive")
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if Alive(cmd.Process.Pid) {
		t.Fatalf("pid %d is alive after it exited", cmd.Process.Pid)
	}
	if Alive(0) || Alive(-1) {
		t.Fatal("pid 0 or -1 counts as alive")
	}
}
