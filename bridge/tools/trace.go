package tools

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/mermaid"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// TraceLog is what the trace tools read: the runs projection and the log.
type TraceLog interface {
	View(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
}

// TraceRunsArgs filters trace_runs.
type TraceRunsArgs struct {
	Status  string `json:"status,omitempty" jsonschema:"ok, failed, denied or incomplete"`
	Tool    string `json:"tool,omitempty" jsonschema:"only calls of this tool"`
	Session string `json:"session,omitempty" jsonschema:"only runs of this MCP session id"`
	Limit   int    `json:"limit,omitempty" jsonschema:"at most this many runs, newest first (default 20, at most 200)"`
}

// TraceRunArgs names one run (trace_replay).
type TraceRunArgs struct {
	RequestID string `json:"requestId" jsonschema:"the request id, from a tool result's _meta[\"tracebridge/requestId\"] or trace_runs"`
}

// TraceDiagramArgs names one run and how to draw it (trace_diagram).
type TraceDiagramArgs struct {
	RequestID string `json:"requestId" jsonschema:"the request id, from a tool result's _meta[\"tracebridge/requestId\"] or trace_runs"`
	Timings   bool   `json:"timings,omitempty" jsonschema:"add each step's time since the run began"`
}

// Crossing is one event as trace_replay returns it.
type Crossing struct {
	Seq        uint64            `json:"seq"`
	Kind       string            `json:"kind"`
	Boundary   events.Boundary   `json:"boundary"`
	From       string            `json:"from"`
	To         string            `json:"to"`
	Outcome    events.Outcome    `json:"outcome"`
	Code       events.Code       `json:"code,omitempty"`
	DurationMs float64           `json:"durationMs"`
	Attrs      map[string]string `json:"attrs,omitempty"`
}

// Trace returns the tools an AI session reads earlier runs' evidence with:
// trace_runs, trace_replay and trace_diagram (capability trace.read).
func Trace(log TraceLog) []*executor.Tool {
	tool := func(id, desc string, schema *jsonschema.Schema, run executor.RunFunc) *executor.Tool {
		return &executor.Tool{
			Descriptor:  executor.Descriptor{ID: id, Description: desc, Category: "trace", Source: "builtin", Capabilities: []string{config.CapTraceRead}},
			InputSchema: schema, Run: run,
		}
	}
	return []*executor.Tool{
		tool("trace_runs", "Recorded runs (one per request id), newest first: method, tool, status (ok, failed, denied, incomplete), duration, event count and the verdict of those that did not succeed.",
			executor.SchemaFor[TraceRunsArgs](), typedRun(func(ctx context.Context, a TraceRunsArgs) (any, error) {
				q := projections.Query{View: projections.ViewRuns, Status: a.Status, Tool: a.Tool, Limit: min(max(a.Limit, 0), 200)}
				if q.Limit == 0 {
					q.Limit = 20
				}
				if a.Session != "" {
					id, err := events.ParseID(a.Session)
					if err != nil {
						return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "session: " + err.Error()}
					}
					q.Session = id
				}
				return log.View(ctx, q)
			})),
		tool("trace_replay", "One run reconstructed: its events in order and the verdict — the first step that failed or never closed, its code, what it means and what the operator can do.",
			executor.SchemaFor[TraceRunArgs](), typedRun(func(ctx context.Context, a TraceRunArgs) (any, error) {
				run, err := judge(ctx, log, a.RequestID)
				if err != nil {
					return nil, err
				}
				out := struct {
					RequestID events.ID      `json:"requestId"`
					SessionID events.ID      `json:"sessionId,omitzero"`
					Tool      string         `json:"tool,omitempty"`
					Method    string         `json:"method,omitempty"`
					Status    string         `json:"status"`
					Verdict   replay.Verdict `json:"verdict"`
					Events    []Crossing     `json:"events"`
				}{run.RequestID, run.SessionID, run.Tool, run.Method, run.Status, run.Verdict, []Crossing{}}
				for _, e := range run.Events {
					out.Events = append(out.Events, Crossing{e.Seq, e.Kind, e.Boundary, e.From, e.To, e.Outcome, e.Code, e.DurationMs, e.Attrs.Map()})
				}
				return out, nil
			})),
		tool("trace_diagram", "A Mermaid sequence diagram of one run (the text itself, to render or read), the first failing boundary highlighted.",
			executor.SchemaFor[TraceDiagramArgs](), typedRun(func(ctx context.Context, a TraceDiagramArgs) (any, error) {
				run, err := judge(ctx, log, a.RequestID)
				if err != nil {
					return nil, err
				}
				return mermaid.Sequence(run.Events, mermaid.Options{Timings: a.Timings}), nil
			})),
	}
}

func judge(ctx context.Context, log TraceLog, id string) (replay.Run, error) {
	req, err := events.ParseID(id)
	if err != nil {
		return replay.Run{}, &events.Err{Code: events.CodeInvalidArguments, Msg: "requestId: " + err.Error()}
	}
	evs, err := log.ByRequest(ctx, req)
	if err != nil {
		return replay.Run{}, err
	}
	if len(evs) == 0 {
		return replay.Run{}, &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf("no events for request %s in this bridge's log", req)}
	}
	return replay.Judge(req, evs), nil
}

// RunResource reads trace://runs/{requestId}: the run's replay as JSON.
func RunResource(ctx context.Context, log TraceLog, requestID string) (string, error) {
	run, err := judge(ctx, log, requestID)
	if err != nil {
		return "", err
	}
	b, err := json.MarshalIndent(run, "", "  ")
	return string(b), err
}
