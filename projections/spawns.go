package projections

import (
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Spawn is the last start of a stdio upstream (upstream.started with a
// pid): what ran, resolved and hashed, as whom, with which environment
// names and confinement. Its key is the server's name.
type Spawn struct {
	Server         string    `json:"server"`
	Seq            uint64    `json:"seq"`
	Time           time.Time `json:"time"`
	Command        string    `json:"command"`
	Executable     string    `json:"executable"`
	Sha256         string    `json:"sha256"`
	UID            string    `json:"uid"`
	PID            string    `json:"pid"`
	Env            string    `json:"env,omitempty"`
	Sandbox        string    `json:"sandbox"`
	SandboxWrite   string    `json:"sandboxWrite,omitempty"`
	SandboxNetwork string    `json:"sandboxNetwork,omitempty"`
}

type spawns struct{}

func (spawns) Name() string { return ViewSpawns }
func (spawns) Version() int { return 1 }

func (spawns) Apply(kv KV, e *events.Event) error {
	a := e.Attrs
	if e.Kind != events.KindUpstreamStarted || a.Get("pid") == "" {
		return nil
	}
	s := Spawn{Server: a.Get("server"), Seq: e.Seq, Time: e.Time, Command: a.Get("command"), Executable: a.Get("executable"),
		Sha256: a.Get("executableSha256"), UID: a.Get("uid"), PID: a.Get("pid"), Env: a.Get("env"), Sandbox: a.Get("sandbox"),
		SandboxWrite: a.Get("sandboxWrite"), SandboxNetwork: a.Get("sandboxNetwork")}
	return saveState(kv, []byte(s.Server), &s)
}

func (spawns) Present(_, v []byte, _ Query) (json.RawMessage, bool, error) {
	return copyJSON(v), true, nil
}

func (spawns) Key(s string) ([]byte, error) { return []byte(s), nil }
