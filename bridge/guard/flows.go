package guard

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"

	"github.com/tracebridge/tracebridge/events"
)

// Flows remembers, per client session, the secrets each server's results
// held, so the same value on its way to another server is known
// (cross-server-secret). The values stay in memory, never in the log.
type Flows struct {
	mu       sync.Mutex
	sessions map[events.ID]*sessionFlows
	order    []events.ID // oldest first: the first forgotten past maxSessions
}

// Origin is where a remembered secret came from.
type Origin struct {
	Server    string
	RequestID events.ID
}

type sessionFlows struct {
	values map[string][]Origin // every server that returned the value, first first
}

// Bounds of what Flows remembers.
const (
	maxSessions      = 1024
	maxPerSession    = 512
	minRememberedLen = 8
)

// NewFlows returns an empty memory.
func NewFlows() *Flows { return &Flows{sessions: map[events.ID]*sessionFlows{}} }

// Remember notes that server's result to request req in session held
// values.
func (f *Flows) Remember(session events.ID, server string, req events.ID, values []string) {
	if len(values) == 0 || server == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[session]
	if s == nil {
		if len(f.order) >= maxSessions {
			delete(f.sessions, f.order[0])
			f.order = f.order[1:]
		}
		s = &sessionFlows{values: map[string][]Origin{}}
		f.sessions[session] = s
		f.order = append(f.order, session)
	}
	for _, v := range values {
		if len(v) < minRememberedLen || len(s.values) >= maxPerSession && s.values[v] == nil {
			continue
		}
		if !slices.ContainsFunc(s.values[v], func(o Origin) bool { return o.Server == server }) {
			s.values[v] = append(s.values[v], Origin{Server: server, RequestID: req})
		}
	}
}

// Check is the finding of a call to server in session whose arguments
// carry a secret another server returned (as written, or JSON-escaped),
// and where it came from; false when none does. A value server returned
// itself may go back to it.
func (f *Flows) Check(session events.ID, server string, args json.RawMessage, act Actions, fingerprint func(string) string) (Finding, Origin, bool) {
	if act("cross-server-secret") == "off" || server == "" {
		return Finding{}, Origin{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.sessions[session]
	if s == nil {
		return Finding{}, Origin{}, false
	}
	text := string(args)
	for v, from := range s.values {
		if slices.ContainsFunc(from, func(o Origin) bool { return o.Server == server }) {
			continue
		}
		o := from[0]
		esc, _ := json.Marshal(v)
		if strings.Contains(text, v) || strings.Contains(text, string(esc[1:len(esc)-1])) {
			return Finding{Rule: "cross-server-secret", Action: act("cross-server-secret"),
				Why:     "the arguments carry a secret server " + o.Server + " returned (request " + o.RequestID.String() + ")",
				Trigger: "[REDACTED:secret:" + fingerprint(v) + "]", Where: "args"}, o, true
		}
	}
	return Finding{}, Origin{}, false
}
