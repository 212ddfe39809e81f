package tools

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// The trace tools answer from a real log: trace_runs lists the runs and
// filters them, trace_replay names the first boundary that failed with its
// code and action, trace_diagram draws it, trace://runs/{id} reads it, and
// a bad or unknown id is InvalidArguments.
func TestTraceToolsReadTheLog(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Name: "trace-test"})
	em := events.NewEmitter(node, events.EmitterOptions{})
	run := func(tool string, fail events.Code) events.ID {
		req, op := em.NewID(), em.NewID()
		attrs := events.A("method", "tools/call", "tool", tool)
		outcome := events.OutcomeOf(fail)
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: attrs})
		em.Emit(events.Event{Kind: events.KindToolStarted, RequestID: req, OperationID: op, Outcome: events.OK, Attrs: attrs})
		if fail != "" {
			em.Emit(events.Event{Kind: events.KindPipeUnavailable, RequestID: req, OperationID: op, Outcome: outcome, Code: fail, Attrs: attrs})
		}
		em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, OperationID: op, Outcome: outcome, Code: fail, Attrs: attrs})
		em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: outcome, Code: fail, Attrs: attrs})
		return req
	}
	ok := run("regex_text_search", "")
	failed := run("get_selection", events.CodePipeUnavailable)
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	tools := map[string]*executor.Tool{}
	for _, tl := range Trace(node) {
		tools[tl.ID] = tl
	}
	call := func(tool string, args any) (any, error) {
		b, _ := json.Marshal(args)
		return tools[tool].Run(ctx, executor.Call{RequestID: em.NewID(), Args: b})
	}

	out, err := call("trace_runs", map[string]any{"status": "failed"})
	if err != nil {
		t.Fatal(err)
	}
	rows := out.([]json.RawMessage)
	if len(rows) != 1 || !strings.Contains(string(rows[0]), failed.String()) || strings.Contains(string(rows[0]), ok.String()) {
		t.Fatalf("trace_runs status=failed: %s", rows)
	}
	if out, _ := call("trace_runs", map[string]any{}); len(out.([]json.RawMessage)) != 2 {
		t.Fatalf("trace_runs: %d runs, want 2", len(out.([]json.RawMessage)))
	}

	out, err = call("trace_replay", map[string]any{"requestId": failed.String()})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(out)
	var replayed struct {
		Status  string
		Verdict struct{ Code, Boundary, Action string }
		Events  []Crossing
	}
	json.Unmarshal(b, &replayed)
	if replayed.Status != "failed" || replayed.Verdict.Code != "PipeUnavailable" || replayed.Verdict.Boundary != "pipe" ||
		replayed.Verdict.Action != events.ActionFor(events.CodePipeUnavailable) || len(replayed.Events) != 5 {
		t.Fatalf("trace_replay: %s", b)
	}

	out, err = call("trace_diagram", map[string]any{"requestId": failed.String()})
	if d, _ := out.(string); err != nil || !strings.HasPrefix(d, "sequenceDiagram") || !strings.Contains(d, "PipeUnavailable") {
		t.Fatalf("trace_diagram: %v\n%v", err, out)
	}
	if r, err := RunResource(ctx, node, ok.String()); err != nil || !strings.Contains(strings.ReplaceAll(r, " ", ""), `"status":"ok"`) {
		t.Fatalf("trace://runs/%s: %v %s", ok, err, r)
	}

	for _, id := range []string{"not-an-id", events.NewID().String()} {
		if _, err := call("trace_replay", map[string]any{"requestId": id}); events.CodeOf(err) != events.CodeInvalidArguments {
			t.Errorf("trace_replay %s: %v, want InvalidArguments", id, err)
		}
	}
	if _, err := call("trace_runs", map[string]any{"session": "x"}); events.CodeOf(err) != events.CodeInvalidArguments {
		t.Errorf("trace_runs with a bad session: %v", err)
	}
}
