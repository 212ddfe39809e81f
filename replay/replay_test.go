package replay

import (
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

func e(kind string, outcome events.Outcome, code events.Code, attrs map[string]string) events.Event {
	info, _ := events.Lookup(kind)
	return events.Event{Kind: kind, Boundary: info.Boundary, Outcome: outcome, Code: code, Attrs: attrs, DurationMs: 1}
}

func TestVerdicts(t *testing.T) {
	req := events.NewID()
	tests := []struct {
		name     string
		evs      []events.Event
		status   string
		boundary events.Boundary
		code     events.Code
		action   bool
	}{
		{"ok", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", map[string]string{"tool": "t", "method": "tools/call"}),
			e(events.KindToolCompleted, events.OK, "", nil), e(events.KindMCPResponseSent, events.OK, "", nil)}, StatusOK, "", "", false},
		{"denied", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil),
			e(events.KindPolicyDecided, events.Denied, events.CodePolicyDenied, map[string]string{"reason": "capability x not granted"}),
			e(events.KindMCPResponseSent, events.Denied, events.CodePolicyDenied, nil)}, StatusDenied, events.BoundaryPolicy, events.CodePolicyDenied, true},
		{"pipe", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil), e(events.KindPipeAttempt, events.OK, "", nil),
			e(events.KindPipeUnavailable, events.Unavailable, events.CodePipeUnavailable, map[string]string{"error": "no host"}),
			e(events.KindMCPResponseSent, events.Unavailable, events.CodePipeUnavailable, nil)}, StatusFailed, events.BoundaryPipe, events.CodePipeUnavailable, true},
		{"crash mid-request", []events.Event{e(events.KindMCPRequestReceived, events.OK, "", nil), e(events.KindToolStarted, events.OK, "", nil)},
			StatusIncomplete, events.BoundaryTool, "", true},
		{"unknown request", nil, StatusIncomplete, "none", "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := Judge(req, tc.evs)
			if r.Status != tc.status || r.Verdict.Boundary != tc.boundary || r.Verdict.Code != tc.code || (r.Verdict.Action != "") != tc.action {
				t.Fatalf("run %+v", r)
			}
		})
	}
	if r := Judge(req, tests[0].evs); r.Tool != "t" || r.Method != "tools/call" || r.Durations["mcp"] != 2 {
		t.Fatalf("run fields %+v", r)
	}
}
