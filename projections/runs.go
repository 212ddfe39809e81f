package projections

import (
	"encoding/json"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/replay"
)

// runs keeps one replay.Fold per request id, so a run's status and verdict
// in `tracebridge runs` are the ones `tracebridge replay` gives.
type runs struct{}

func (runs) Name() string { return ViewRuns }
func (runs) Version() int { return 7 } // 2: the call's own end, its wait, its proposal's later fate; 3: an operator's command names its run; 4: client and server; 5: the server is the tool's; 6: judged by its own server; 7: the user

func (runs) Apply(kv KV, e *events.Event) error {
	if e.RequestID.IsZero() {
		return nil
	}
	f, _, err := loadState[replay.Fold](kv, e.RequestID[:])
	if err != nil {
		return err
	}
	f.Add(e)
	return saveState(kv, e.RequestID[:], f)
}

func (runs) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	var f replay.Fold
	if err := json.Unmarshal(v, &f); err != nil {
		return nil, false, err
	}
	s := f.Summary()
	if q.Kind != "" && q.Kind != runKind(s) {
		return nil, false, nil
	}
	if (q.Status != "" && s.Status != q.Status) || (q.Tool != "" && s.Tool != q.Tool) ||
		(!q.Session.IsZero() && s.SessionID != q.Session) || (q.Text != "" && !matches(s, q.Text)) {
		return nil, false, nil
	}
	b, err := json.Marshal(s)
	return b, true, err
}

// Run kinds.
const (
	KindMCP   = "mcp"   // a request an MCP client sent
	KindOther = "other" // an operator action, a UI view, synthetic load
)

// runKind says whether a run is an MCP client's request or something else.
func runKind(s replay.Summary) string {
	if s.Method != "" {
		return KindMCP
	}
	return KindOther
}

// matches reports whether text occurs (ignoring case) in the run's ids,
// tool, method, client, server, status or verdict.
func matches(s replay.Summary, text string) bool {
	hay := strings.ToLower(strings.Join([]string{s.RequestID.String(), s.SessionID.String(), s.Tool, s.Method, s.Client, s.Server, s.Status,
		string(s.Verdict.Code), string(s.Verdict.Boundary), s.Verdict.Message}, " "))
	return strings.Contains(hay, strings.ToLower(text))
}

func (runs) Key(s string) ([]byte, error) { return idKey(s) }
