// Package confine runs a stdio upstream confined by Landlock: the bridge
// plans what the server may touch (Plan), and starts it through itself
// (Wrap): the child, still tracebridge, restricts its own thread with the
// plan and execs the server, which inherits the restriction (package
// landlock's trampoline). The bridge itself stays unconfined.
package confine

import (
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/tracebridge/tracebridge/internal/landlock"
)

// Spec is what a confined server may do (landlock.Rules).
type Spec = landlock.Rules

// Network modes.
const (
	NetAny   = landlock.NetAny
	NetNone  = landlock.NetNone
	NetPorts = landlock.NetPorts
)

// EnvSpec carries the plan to the trampoline.
const EnvSpec = landlock.EnvSpec

// ABI is the Landlock ABI version the kernel offers (0: none).
func ABI() int { return landlock.ABI() }

// Wrap makes cmd start through the trampoline with spec (cmd.Path and
// cmd.Args as exec.Command made them): the same process, confined before
// its exec.
func Wrap(cmd *exec.Cmd, spec Spec) error {
	// /proc/self/exe is the running binary even when its file was replaced
	// or removed since (an upgrade under a running bridge): the child of
	// the fork execs its parent's image, whatever the path now holds.
	if _, err := os.Stat("/proc/self/exe"); err == nil {
		return WrapWith(cmd, spec, "/proc/self/exe")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("confine: the bridge's own executable: %w", err)
	}
	return WrapWith(cmd, spec, self)
}

// WrapWith is Wrap through the trampoline at self (a tracebridge binary).
func WrapWith(cmd *exec.Cmd, spec Spec, self string) error {
	cmd.Path = self
	cmd.Args = append([]string{self, landlock.Verb}, cmd.Args...)
	cmd.Env = append(cmd.Env, landlock.EnvSpec+"="+Encode(spec))
	return nil
}

// Encode writes spec as the trampoline reads it (landlock.Decode): lines
// "field value". A path holding a newline cannot be said and is left out:
// nothing is granted that was not meant.
func Encode(spec Spec) string {
	var b strings.Builder
	line := func(k, v string) {
		if v != "" && !strings.ContainsAny(v, "\n\x00") {
			b.WriteString(k + " " + v + "\n")
		}
	}
	line("exec", spec.Exec)
	line("net", spec.Net)
	for _, p := range spec.Read {
		line("read", p)
	}
	for _, p := range spec.Write {
		line("write", p)
	}
	for _, p := range spec.Devices {
		line("dev", p)
	}
	for _, p := range spec.Ports {
		line("port", fmt.Sprint(p))
	}
	return b.String()
}

// NetWords says the network spec allows: "any", "none", "tcp 443,8080".
func NetWords(s Spec) string {
	if s.Net != NetPorts {
		return s.Net
	}
	ports := make([]string, len(s.Ports))
	for i, p := range s.Ports {
		ports[i] = fmt.Sprint(p)
	}
	return "tcp " + strings.Join(ports, ",")
}
