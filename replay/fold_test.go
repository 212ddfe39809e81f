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

// B2: a run is judged by its own server's crossings, and agrees with what
// its client was told: a run that started every server (one of which could
// not start) is not failed by that other server.
func TestRunIsJudgedByItsOwnServer(t *testing.T) {
	ev := func(kind string, b events.Boundary, o events.Outcome, code events.Code, attrs ...string) *events.Event {
		return &events.Event{Kind: kind, Boundary: b, Outcome: o, Code: code, Attrs: events.A(attrs...)}
	}
	otherFails := ev(events.KindUpstreamStarted, events.BoundaryUpstream, events.Error, events.CodeSecretUnresolved, events.AttrServer, "other", events.AttrError, "server other: secret GH is not set")
	for name, c := range map[string]struct {
		evs            []*events.Event
		status, server string
		code           events.Code
	}{
		"a tools/list that succeeded": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "tools/list"),
			otherFails,
			ev(events.KindUpstreamRequestSent, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindUpstreamResponse, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.OK, ""),
		}, StatusOK, "everything", ""},
		"a call to another server": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "tools/call"),
			otherFails,
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, events.OK, "", "source", "upstream:everything"),
			ev(events.KindUpstreamRequestSent, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindUpstreamResponse, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.OK, ""),
		}, StatusOK, "everything", ""},
		"a prompt of another server": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "prompts/get"),
			otherFails,
			ev(events.KindUpstreamRequestSent, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindUpstreamResponse, events.BoundaryUpstream, events.OK, "", events.AttrServer, "everything"),
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.OK, ""),
		}, StatusOK, "everything", ""},
		"a call whose own server could not start": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "tools/call"),
			otherFails,
			ev(events.KindUpstreamStarted, events.BoundaryUpstream, events.Unavailable, events.CodeUpstreamUnavailable, events.AttrServer, "memory"),
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, events.OK, "", "source", "upstream:memory"),
			ev(events.KindToolCompleted, events.BoundaryExecutor, events.Unavailable, events.CodeUpstreamUnavailable),
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.Unavailable, events.CodeUpstreamUnavailable),
		}, StatusFailed, "memory", events.CodeUpstreamUnavailable},
		"an unknown tool": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "tools/call"),
			otherFails,
			ev(events.KindExecutorCatalog, events.BoundaryExecutor, events.Error, events.CodeUnknownTool),
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.Error, events.CodeUnknownTool),
		}, StatusFailed, "", events.CodeUnknownTool},
		"a list the client was told failed for that server": {[]*events.Event{
			ev(events.KindMCPRequestReceived, events.BoundaryMCP, events.OK, "", events.AttrMethod, "prompts/list"),
			otherFails,
			ev(events.KindMCPResponseSent, events.BoundaryMCP, events.Error, events.CodeSecretUnresolved),
		}, StatusFailed, "", events.CodeSecretUnresolved},
	} {
		var f Fold
		for i, e := range c.evs {
			e := *e
			e.Seq = uint64(i + 1)
			f.Add(&e)
		}
		s := f.Summary()
		if s.Status != c.status || s.Server != c.server || s.Verdict.Code != c.code {
			t.Errorf("%s: %s, server %q, verdict %+v; want %s, %q, %q", name, s.Status, s.Server, s.Verdict, c.status, c.server, c.code)
		}
		if c.code == events.CodeUpstreamUnavailable && s.Verdict.Boundary != events.BoundaryUpstream {
			t.Errorf("%s: the verdict is not the server's own failure: %+v", name, s.Verdict)
		}
	}
}
