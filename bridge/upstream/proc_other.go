//go:build !unix

package upstream

import "os/exec"

func setProcAttrs(*exec.Cmd) {}

// killGroup: no process groups here; stop kills the process itself.
func killGroup(int) {}
