//go:build !unix

package upstream

import "os/exec"

func setProcAttrs(*exec.Cmd) {}

// killGroup: no process groups here; stop kills the process itself.
func killGroup(int) {}

// killTagged: no /proc to find an upstream's escaped children by.
func killTagged(string) {}
