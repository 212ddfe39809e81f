// Package confine runs a stdio upstream confined by Landlock: the bridge
// plans what the server may touch (Plan), and starts it through itself
// (Wrap): the child, still tracebridge, restricts its own thread with the
// plan and execs the server, which inherits the restriction. The bridge
// itself stays unconfined.
package confine

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Verb is the hidden first argument that makes a tracebridge process (or
// any binary importing this package) the trampoline: apply the plan in
// EnvSpec, then exec the server.
const Verb = "__confine"

// EnvSpec carries the plan to the trampoline, which removes it before the
// exec.
const EnvSpec = "TRACEBRIDGE_CONFINE"

// Network modes.
const (
	NetAny   = "any"   // TCP not restricted
	NetNone  = "none"  // no TCP connect or bind
	NetPorts = "ports" // TCP connect to Ports only, no bind
)

// Spec is what a confined server may do: paths it may read (and run)
// beneath, paths it may change beneath, device files it may read and
// write, and its TCP network.
type Spec struct {
	// Exec is the absolute path of the server's executable.
	Exec    string   `json:"exec"`
	Read    []string `json:"read,omitempty"`
	Write   []string `json:"write,omitempty"`
	Devices []string `json:"devices,omitempty"`
	Net     string   `json:"net"`
	Ports   []uint16 `json:"ports,omitempty"`
}

// Wrap makes cmd start through the trampoline with spec (cmd.Path and
// cmd.Args as exec.Command made them): the same process, confined before
// its exec.
func Wrap(cmd *exec.Cmd, spec Spec) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("confine: the bridge's own executable: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	cmd.Path = self
	cmd.Args = append([]string{self, Verb}, cmd.Args...)
	cmd.Env = append(cmd.Env, EnvSpec+"="+string(b))
	return nil
}

// NetWords says the network spec allows: "any", "none", "tcp 443,8080".
func (s Spec) NetWords() string {
	if s.Net != NetPorts {
		return s.Net
	}
	ports := make([]string, len(s.Ports))
	for i, p := range s.Ports {
		ports[i] = fmt.Sprint(p)
	}
	return "tcp " + strings.Join(ports, ",")
}
