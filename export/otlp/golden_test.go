package otlp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/golden"
)

// upstreamRun is a fixed tools/call of an upstream tool that a client
// traced (it sent a traceparent), approved by an operator, whose upstream
// answered an error: every kind of span and attribute a backend shows.
func upstreamRun(t *testing.T) []events.Event {
	id := func(n int) events.ID {
		v, err := events.ParseID(fmt.Sprintf("01KB%022d", n))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	req, op, sess := id(1), id(2), id(3)
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var evs []events.Event
	add := func(ms int, kind string, code events.Code, attrs map[string]string) {
		info, _ := events.Lookup(kind)
		e := events.Event{Seq: uint64(len(evs) + 1), ID: id(100 + len(evs)), Time: t0.Add(time.Duration(ms) * time.Millisecond),
			Kind: kind, Boundary: info.Boundary, From: info.From, To: info.To, RequestID: req, SessionID: sess, OperationID: op,
			Outcome: events.OutcomeOf(code), Code: code, Attrs: events.AttrsOf(attrs)}
		if kind == events.KindMCPRequestReceived || kind == events.KindMCPResponseSent {
			e.OperationID = events.ID{}
		}
		if kind == events.KindMCPRequestReceived {
			e.Traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		}
		evs = append(evs, e)
	}
	call := map[string]string{events.AttrMethod: "tools/call", events.AttrTool: "fs__write_file", "jsonrpcId": "7", "protocolVersion": "2025-11-25", "transport": "tcp"}
	add(0, events.KindMCPRequestReceived, "", call)
	add(1, events.KindExecutorStarted, "", map[string]string{events.AttrTool: "fs__write_file"})
	add(1, events.KindPolicyDecided, "", map[string]string{"decision": "approve", "rule": "approval.mode"})
	add(2, events.KindApprovalRequested, "", map[string]string{events.AttrTool: "fs__write_file"})
	add(40, events.KindApprovalDecided, "", map[string]string{"decision": "approve", "by": "operator:root"})
	add(41, events.KindToolStarted, "", map[string]string{events.AttrTool: "fs__write_file"})
	add(42, events.KindUpstreamRequestSent, "", map[string]string{events.AttrMethod: "tools/call", "server": "fs", "request": `{"path":"notes.txt"}`, "upstreamTool": "write_file", "rpcId": "3"})
	add(48, events.KindUpstreamResponse, events.CodeUpstreamError, map[string]string{"server": "fs", events.AttrError: "server fs's tool write_file failed: read-only file system"})
	add(48, events.KindToolCompleted, events.CodeUpstreamError, map[string]string{events.AttrTool: "fs__write_file"})
	add(49, events.KindExecutorAudit, events.CodeUpstreamError, map[string]string{events.AttrEnvelope: `{"tool":"fs__write_file","result":"UpstreamError: read-only file system","outcome":"error"}`})
	add(49, events.KindMCPResponseSent, events.CodeUpstreamError, map[string]string{events.AttrParams: `{"path":"notes.txt","content":"x"}`, "rpcCode": "0"})
	return evs
}

// render is spans as a tree a person reads: each span with its parent,
// kind, times from the run's start, status, attributes and events, in a
// fixed order.
func render(spans []sdktrace.ReadOnlySpan) string {
	if len(spans) == 0 {
		return "(no spans)\n"
	}
	t0 := spans[0].StartTime()
	names := map[string]string{}
	for _, s := range spans {
		names[s.SpanContext().SpanID().String()] = s.Name()
	}
	var b strings.Builder
	for _, s := range spans {
		parent := "remote " + s.Parent().SpanID().String()
		if n, ok := names[s.Parent().SpanID().String()]; ok {
			parent = n
		} else if !s.Parent().IsValid() {
			parent = "none"
		}
		fmt.Fprintf(&b, "span %q kind=%s parent=%q trace=%s %s..%s status=%s %q\n", s.Name(), s.SpanKind(), parent,
			s.SpanContext().TraceID(), s.StartTime().Sub(t0), s.EndTime().Sub(t0), s.Status().Code, s.Status().Description)
		var attrs []string
		for _, a := range s.Attributes() {
			attrs = append(attrs, fmt.Sprintf("  attr %s=%s", a.Key, a.Value.String()))
		}
		slices.Sort(attrs)
		for _, a := range attrs {
			b.WriteString(a + "\n")
		}
		for _, e := range s.Events() {
			var kv []string
			for _, a := range e.Attributes {
				kv = append(kv, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
			}
			slices.Sort(kv)
			fmt.Fprintf(&b, "  event %s +%s %s\n", e.Name, e.Time.Sub(t0), strings.Join(kv, " "))
		}
	}
	return b.String()
}

// The spans of a traced, approved upstream call that failed, with and
// without content: names, nesting, kinds, times, status and every
// attribute as a backend receives them (testdata/*.txt; -update writes
// them).
func TestSpansGolden(t *testing.T) {
	evs := upstreamRun(t)
	golden.Check(t, "spans-upstream-call.txt", render(Spans(evs, Options{})))
	golden.Check(t, "spans-upstream-call-content.txt", render(Spans(evs, Options{Content: true})))
	if got := render(Spans(evs[1:], Options{})); got != "(no spans)\n" {
		t.Errorf("a run without its MCP request has spans:\n%s", got)
	}
}
