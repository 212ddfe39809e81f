//go:build !unix

package main

import "os/exec"

// detach: no sessions to leave here.
func detach(*exec.Cmd) {}

func ownGroup(c *exec.Cmd) {}

func killGroup(c *exec.Cmd) { c.Process.Kill() }
