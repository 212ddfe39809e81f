//go:build unix

package main

import (
	"os/exec"
	"syscall"
)

// detach starts c in a session of its own: out of its parent's process
// group, as a daemonizing child does.
func detach(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setsid: true} }

// ownGroup starts c as the leader of a process group of its own;
// killGroup ends that group, children too (tsx runs its server in a
// child).
func ownGroup(c *exec.Cmd) { c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

func killGroup(c *exec.Cmd) { syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
