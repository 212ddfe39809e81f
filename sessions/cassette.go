package sessions

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

// A session file is data, never code: whoever wrote it may be hostile. A
// re-drive starts no process, resolves no secret and reads no file other
// than the recording; the recording stands in for all of them.

// cassetteConfig is the recording's configuration with everything that
// would reach outside the re-drive removed: discovered tools (manifests
// on disk, run as processes) are not loaded, and upstream servers are
// neither started nor dialed, so a call of one is an UnknownTool and shows
// as drift.
func cassetteConfig(c *config.Config) *config.Config {
	out := *c
	out.Discovery = config.Discovery{}
	// Upstream servers keep what decides policy and approval (names,
	// patterns, capability, timeout) and lose what would start or reach
	// anything: a re-drive dials the recording instead (RecordedUpstreams).
	out.Servers = map[string]config.Server{}
	for name, sv := range c.Servers {
		sv.Command, sv.Args, sv.Cwd, sv.Env, sv.URL, sv.Headers, sv.Start = "", nil, "", nil, "", nil, ""
		out.Servers[name] = sv
	}
	return &out
}

// recordedSecrets answers secret look-ups (and approval deadlines) from
// the recording: a reference
// resolves to a stand-in value when the step being re-driven recorded a
// successful secrets.resolved, and fails otherwise. The environment and
// the files a reference names are never consulted.
type recordedSecrets struct {
	step atomic.Pointer[Step]
}

// errNotRecorded is what a file secret reads when the recording did not
// resolve it.
var errNotRecorded = errors.New("the recording did not resolve this secret (a re-drive reads no files)")

func (r *recordedSecrets) resolved() bool {
	st := r.step.Load()
	if st == nil {
		return false
	}
	for _, c := range st.Expect {
		if c.Kind == events.KindSecretsResolved {
			return c.Outcome == events.OK
		}
	}
	return false
}

// Getenv stands in for os.Getenv in the executor's secret broker.
func (r *recordedSecrets) Getenv(name string) string {
	if r.resolved() {
		return "recorded-secret-" + name
	}
	return ""
}

// ReadFile stands in for os.ReadFile in the executor's secret broker.
func (r *recordedSecrets) ReadFile(string) ([]byte, error) {
	if r.resolved() {
		return []byte("recorded-secret"), nil
	}
	return nil, errNotRecorded
}

// After stands in for the approval deadline's timer: a step whose
// recording timed out times out at once; any other never does (its
// recorded decision is given again, or there was no prompt).
func (r *recordedSecrets) After(time.Duration) <-chan time.Time {
	st := r.step.Load()
	if st != nil {
		for _, c := range st.Expect {
			if c.Kind == events.KindApprovalDecided && c.Code == events.CodeApprovalTimeout {
				ch := make(chan time.Time, 1)
				ch <- time.Time{}
				return ch
			}
		}
	}
	return nil
}
