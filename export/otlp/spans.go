package otlp

import (
	"context"
	"encoding/json"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/replay"
)

// Scope names the instrumentation in every exported span.
var Scope = instrumentation.Scope{Name: "github.com/tracebridge/tracebridge", Version: "1"}

// traceID is the trace of a run without a client traceparent: derived from
// its request id.
func traceID(req events.ID) trace.TraceID { return events.TraceID(req) }

// spanID is the span an event opens (or, for the request, the server span).
func spanID(ev events.ID) trace.SpanID { return events.SpanID(ev) }

// Options shapes the spans. The zero value exports no arguments or results.
type Options struct {
	Resource *resource.Resource
	// Content adds the redacted arguments and result (the conventions'
	// opt-in gen_ai.tool.call.arguments / .result).
	Content bool
}

// Spans turns one run's events (in any order) into its spans: nil when the
// run has no MCP request (an operator's action, a hub's life).
func Spans(evs []events.Event, opts Options) []sdktrace.ReadOnlySpan {
	evs = replay.Causal(evs)
	var req *events.Event
	for i := range evs {
		if evs[i].Kind == events.KindMCPRequestReceived {
			req = &evs[i]
			break
		}
	}
	if req == nil {
		return nil
	}
	root := rootSpan(req, evs, opts)
	stubs := []*tracetest.SpanStub{root}
	// Open steps, innermost last: a step's span is the child of the step
	// open when it started (a pipe call inside the tool's run inside the
	// executor), a point event an event of it.
	type open struct {
		span     *tracetest.SpanStub
		from, to int // event positions; to = -1: never closed
	}
	var stack []open
	parentAt := func(i int) *tracetest.SpanStub {
		for len(stack) > 0 {
			top := stack[len(stack)-1]
			if top.to == -1 || top.to > i {
				return top.span
			}
			stack = stack[:len(stack)-1]
		}
		return root
	}
	closed := map[int]bool{}
	for i := range evs {
		e := &evs[i]
		info, _ := events.Lookup(e.Kind)
		if e == req || e.Kind == events.KindMCPResponseSent {
			continue
		}
		parent := parentAt(i)
		if closed[i] {
			continue
		}
		if target, ok := guardTargets[e.Kind]; ok {
			stubs = append(stubs, guardSpan(e, target, parent, opts))
			continue
		}
		if len(info.ClosedBy) == 0 {
			if !closers[e.Kind] {
				parent.Events = append(parent.Events, spanEvent(e))
			}
			continue
		}
		end := closer(evs, i, info.ClosedBy)
		s := &tracetest.SpanStub{
			Name:        stepName(e, info),
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: root.SpanContext.TraceID(), SpanID: spanID(e.ID), TraceFlags: trace.FlagsSampled}),
			Parent:      parent.SpanContext, SpanKind: spanKind(info.Boundary), StartTime: e.Time, EndTime: e.Time,
			Attributes: stepAttrs(e), Resource: opts.Resource, InstrumentationScope: Scope,
		}
		if end >= 0 {
			closed[end] = true
			c := &evs[end]
			s.EndTime = c.Time
			s.Events = append(s.Events, spanEvent(c))
			if c.Outcome.Failed() {
				s.Status = sdktrace.Status{Code: codes.Error, Description: string(c.Code)}
				s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(string(c.Code)))
			}
		}
		stubs = append(stubs, s)
		stack = append(stack, open{span: s, from: i, to: end})
	}
	out := make(tracetest.SpanStubs, len(stubs))
	for i, s := range stubs {
		out[i] = *s
	}
	return out.Snapshots()
}

// stepName names a step's span: an MCP request to an upstream as the MCP
// conventions name a client span ("{mcp.method.name} {target}"), every
// other step by its boundary and kind.
func stepName(e *events.Event, info events.KindInfo) string {
	if e.Kind == events.KindUpstreamRequestSent {
		if m := e.Attrs.Get(events.AttrMethod); m != "" {
			if target := e.Attrs.Get(projections.AttrUpTool); target != "" {
				return m + " " + target
			}
			return m
		}
	}
	return string(info.Boundary) + " " + e.Kind
}

// stepAttrs are a step's attributes: its event's, and for an MCP request
// to an upstream those of the MCP conventions' client span.
func stepAttrs(e *events.Event) []attribute.KeyValue {
	out := attrs(e)
	if e.Kind != events.KindUpstreamRequestSent {
		return out
	}
	m := e.Attrs.Get(events.AttrMethod)
	out = append(out, semconv.McpMethodNameKey.String(m))
	if id := e.Attrs.Get("rpcId"); id != "" {
		out = append(out, semconv.JSONRPCRequestIDKey.String(id))
	}
	if m == "tools/call" {
		out = append(out, semconv.GenAIToolNameKey.String(e.Attrs.Get(projections.AttrUpTool)), semconv.GenAIOperationNameExecuteTool)
	}
	return out
}

// closers are the kinds that close a step some kind opens: the step's span
// carries them as its last event.
var closers = func() map[string]bool {
	m := map[string]bool{}
	for _, k := range events.Kinds() {
		for _, c := range k.ClosedBy {
			m[c] = true
		}
	}
	return m
}()

// closer is the index of the event that closes the step evs[i] opens: the
// first later one of its closers with the same operation id (when it has
// one), or -1.
func closer(evs []events.Event, i int, closers []string) int {
	for j := i + 1; j < len(evs); j++ {
		e := &evs[j]
		if evs[i].OperationID != e.OperationID && !evs[i].OperationID.IsZero() && !e.OperationID.IsZero() {
			continue
		}
		for _, c := range closers {
			if e.Kind == c {
				return j
			}
		}
	}
	return -1
}

func rootSpan(req *events.Event, evs []events.Event, opts Options) *tracetest.SpanStub {
	method, tool := req.Attrs.Get(events.AttrMethod), req.Attrs.Get(events.AttrTool)
	if tool == "" && !strings.HasPrefix(method, "resources/") {
		// The target the run names, as the runs table does (a prompt's name
		// is on its policy step); a resource's URI, unbounded, never is.
		for i := range evs {
			if tool = evs[i].Attrs.Get(events.AttrTool); tool != "" {
				break
			}
		}
	}
	name := method
	if tool != "" {
		name += " " + tool
	}
	traceID, parent := traceID(req.RequestID), trace.SpanContext{}
	if tp, ok := parseTraceparent(req.Traceparent); ok {
		traceID, parent = tp.TraceID(), tp
	}
	s := &tracetest.SpanStub{
		Name:        name,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID(req.ID), TraceFlags: trace.FlagsSampled}),
		Parent:      parent, SpanKind: trace.SpanKindServer, StartTime: req.Time, EndTime: req.Time,
		Resource: opts.Resource, InstrumentationScope: Scope,
		Attributes: []attribute.KeyValue{
			semconv.McpMethodNameKey.String(method),
			transportOf(req),
			attribute.String("tracebridge.request.id", req.RequestID.String()),
		},
	}
	if id := req.Attrs.Get("jsonrpcId"); id != "" {
		s.Attributes = append(s.Attributes, semconv.JSONRPCRequestIDKey.String(id))
	}
	if !req.SessionID.IsZero() {
		s.Attributes = append(s.Attributes, semconv.McpSessionIDKey.String(req.SessionID.String()))
	}
	if v := req.Attrs.Get("protocolVersion"); v != "" {
		s.Attributes = append(s.Attributes, semconv.McpProtocolVersionKey.String(v))
	}
	if u := identity.FromAttrs(req.Attrs.Get); !u.IsZero() { // who made it ([auth])
		s.Attributes = append(s.Attributes, semconv.UserIDKey.String(u.Subject), semconv.UserNameKey.String(u.Display()))
		if u.Email != "" {
			s.Attributes = append(s.Attributes, semconv.UserEmailKey.String(u.Email))
		}
		if len(u.Groups) > 0 {
			s.Attributes = append(s.Attributes, semconv.UserRolesKey.StringSlice(u.Groups))
		}
		if u.ClientID != "" {
			s.Attributes = append(s.Attributes, attribute.String("oauth.client.id", u.ClientID))
		}
	}
	if method == "tools/call" {
		s.Attributes = append(s.Attributes, semconv.GenAIToolNameKey.String(tool), semconv.GenAIOperationNameExecuteTool)
	}
	for i := range evs {
		e := &evs[i]
		switch e.Kind {
		case events.KindMCPResponseSent:
			s.EndTime = e.Time
			if e.Code != "" {
				s.Status = sdktrace.Status{Code: codes.Error, Description: string(e.Code)}
				s.Attributes = append(s.Attributes, semconv.ErrorTypeKey.String(string(e.Code)))
				if rc := e.Attrs.Get("rpcCode"); rc != "" {
					s.Attributes = append(s.Attributes, semconv.RPCResponseStatusCodeKey.String(rc))
				}
			}
			if opts.Content {
				if p := e.Attrs.Get(events.AttrParams); p != "" {
					s.Attributes = append(s.Attributes, attribute.String("gen_ai.tool.call.arguments", p))
				}
			}
		case events.KindExecutorAudit:
			if opts.Content && e.Attrs.Get(events.AttrEnvelope) != "" {
				s.Attributes = append(s.Attributes, attribute.String("gen_ai.tool.call.result", resultOf(e.Attrs.Get(events.AttrEnvelope))))
			}
		}
	}
	return s
}

// transportOf is the client's transport as the conventions name it: tcp
// for Streamable HTTP, pipe for stdio (and for requests recorded before
// the transport was).
func transportOf(req *events.Event) attribute.KeyValue {
	if req.Attrs.Get("transport") == "tcp" {
		return semconv.NetworkTransportTCP
	}
	return semconv.NetworkTransportPipe
}

// resultOf is the envelope's redacted result summary, as text: the
// envelope is JSON, so its result is decoded, not quoted again (a cut
// envelope gives what its result string holds up to the cut).
func resultOf(envelope string) string {
	var env struct {
		Result string `json:"result"`
	}
	if json.Unmarshal([]byte(envelope), &env) == nil {
		return env.Result
	}
	const key = `"result":"`
	i := strings.Index(envelope, key)
	if i < 0 {
		return ""
	}
	rest := envelope[i+len(key):]
	if j := strings.Index(rest, `","`); j >= 0 {
		rest = rest[:j]
	}
	var s string
	if json.Unmarshal([]byte(`"`+strings.TrimSuffix(rest, `\`)+`"`), &s) == nil {
		return s
	}
	return rest
}

func spanEvent(e *events.Event) sdktrace.Event {
	return sdktrace.Event{Name: e.Kind, Time: e.Time, Attributes: attrs(e)}
}

// attrs are an event's attributes for OTLP: its code and outcome, and its
// own (already redacted) attributes under tracebridge.*.
func attrs(e *events.Event) []attribute.KeyValue {
	out := []attribute.KeyValue{attribute.String("tracebridge.outcome", string(e.Outcome))}
	if e.Code != "" {
		out = append(out, attribute.String("tracebridge.code", string(e.Code)))
	}
	for k, v := range e.Attrs.All() {
		if k == "envelope" || k == "params" || k == "answer" || k == "request" || k == "result" || k == "descriptor" {
			continue // content: only with Options.Content, on the server span
		}
		out = append(out, attribute.String("tracebridge."+k, v))
	}
	return out
}

func spanKind(b events.Boundary) trace.SpanKind {
	switch b {
	case events.BoundaryPipe, events.BoundaryUpstream:
		return trace.SpanKindClient
	case events.BoundaryHost:
		return trace.SpanKindServer
	}
	return trace.SpanKindInternal
}

// parseTraceparent reads a W3C traceparent as the remote parent.
func parseTraceparent(tp string) (trace.SpanContext, bool) {
	parts := strings.Split(tp, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return trace.SpanContext{}, false
	}
	tid, err1 := trace.TraceIDFromHex(parts[1])
	sid, err2 := trace.SpanIDFromHex(parts[2])
	if err1 != nil || err2 != nil {
		return trace.SpanContext{}, false
	}
	flags := trace.FlagsSampled
	if parts[3] == "00" {
		flags = 0
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}

// contextWithSpan carries a span context (for log records to name their
// trace and span).
func contextWithSpan(ctx context.Context, traceID trace.TraceID, spanID trace.SpanID) context.Context {
	return trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: traceID, SpanID: spanID, TraceFlags: trace.FlagsSampled}))
}
