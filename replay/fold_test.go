package replay

import (
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// B3: a run's server is the one its tool belongs to, not the first
// server the run happened to start; a call refused before any upstream
// was reached still names it; a run with no tool of a server names the
// first upstream crossing's.
func TestRunServerIsTheToolsServer(t *testing.T) {
	ev := func(kind string, b events.Boundary, attrs ...string) *events.Event {
		return &events.Event{Kind: kind, Boundary: b, Outcome: events.OK, Attrs: events.A(attrs...)}
	}
	for name, c := range map[string]struct {
		evs  []*events.Event
		want string
	}{
		"another server started first": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.AttrMethod, "tools/call"),
			ev(events.KindUpstreamStarted, events.BoundaryUpstream, events.AttrServer, "time"),
			ev(events.KindUpstreamStarted, events.BoundaryUpstream, events.AttrServer, "memory"),
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, "source", "upstream:memory"),
			ev(events.KindUpstreamRequestSent, events.BoundaryUpstream, events.AttrServer, "memory"),
		}, "memory"},
		"refused before the upstream": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.AttrMethod, "tools/call"),
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, "source", "upstream:memory"),
			ev(events.KindPolicyDecided, events.BoundaryPolicy),
		}, "memory"},
		"a built-in tool": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.AttrMethod, "tools/call"),
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, "source", "builtin"),
		}, ""},
		"a prompt": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.AttrMethod, "prompts/get"),
			ev(events.KindUpstreamRequestSent, events.BoundaryUpstream, events.AttrServer, "everything"),
		}, "everything"},
	} {
		var f Fold
		for i, e := range c.evs {
			e.Seq = uint64(i + 1)
			f.Add(e)
		}
		if got := f.Summary().Server; got != c.want {
			t.Errorf("%s: server %q, want %q", name, got, c.want)
		}
	}
}
