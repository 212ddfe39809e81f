package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	collectorlogs "go.opentelemetry.io/proto/otlp/collector/logs/v1"
	collectormetrics "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	logspb "go.opentelemetry.io/proto/otlp/logs/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/tracebridge/tracebridge/events"
)

// otlpReceiver is an OTLP trace receiver (HTTP protobuf and gRPC) that
// keeps what it is sent; the first failFirst requests are refused, as a
// collector that is down.
type otlpReceiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu        sync.Mutex
	spans     []*tracepb.Span
	failFirst atomic.Int32
	requests  atomic.Int32
	// durations counts the runs in mcp.server.operation.duration points.
	durations atomic.Uint64
	logs      []*logspb.LogRecord
}

func (r *otlpReceiver) take(req *collectortrace.ExportTraceServiceRequest) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			r.spans = append(r.spans, ss.Spans...)
		}
	}
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.requests.Add(1)
	if r.failFirst.Add(-1) >= 0 {
		http.Error(w, "collector down", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(req.Body)
	if req.URL.Path == "/v1/logs" {
		var lr collectorlogs.ExportLogsServiceRequest
		if proto.Unmarshal(body, &lr) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rl := range lr.ResourceLogs {
			for _, sl := range rl.ScopeLogs {
				r.logs = append(r.logs, sl.LogRecords...)
			}
		}
		r.mu.Unlock()
		b, _ := proto.Marshal(&collectorlogs.ExportLogsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
		return
	}
	if req.URL.Path == "/v1/metrics" {
		var mr collectormetrics.ExportMetricsServiceRequest
		if proto.Unmarshal(body, &mr) != nil {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		for _, rm := range mr.ResourceMetrics {
			for _, sm := range rm.ScopeMetrics {
				for _, m := range sm.Metrics {
					if h := m.GetHistogram(); m.Name == "mcp.server.operation.duration" && h != nil {
						for _, p := range h.DataPoints {
							r.durations.Add(p.Count)
						}
					}
				}
			}
		}
		b, _ := proto.Marshal(&collectormetrics.ExportMetricsServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.Write(b)
		return
	}
	var er collectortrace.ExportTraceServiceRequest
	if req.URL.Path != "/v1/traces" || proto.Unmarshal(body, &er) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	r.take(&er)
	b, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
}

func (r *otlpReceiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.requests.Add(1)
	r.take(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// grpcLogs is the gRPC logs service of a receiver.
type grpcLogs struct {
	collectorlogs.UnimplementedLogsServiceServer
	records atomic.Int32
}

func (g *grpcLogs) Export(_ context.Context, req *collectorlogs.ExportLogsServiceRequest) (*collectorlogs.ExportLogsServiceResponse, error) {
	for _, rl := range req.ResourceLogs {
		for _, sl := range rl.ScopeLogs {
			g.records.Add(int32(len(sl.LogRecords)))
		}
	}
	return &collectorlogs.ExportLogsServiceResponse{}, nil
}

func (r *otlpReceiver) all() []*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...)
}

func attrOf(s *tracepb.Span, key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// serverSpans are the received server spans by request id (the last one
// received for each).
func serverSpans(spans []*tracepb.Span) map[string]*tracepb.Span {
	out := map[string]*tracepb.Span{}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_SERVER && attrOf(s, "tracebridge.request.id") != "" {
			out[attrOf(s, "tracebridge.request.id")] = s
		}
	}
	return out
}

// export otlp sends every run as a trace with the MCP conventions, to a
// real OTLP/HTTP receiver: the span tree, names and attributes; the
// client's traceparent as the parent; failures carrying their code; no
// secret; the same ids when sent again.
func TestOTLPExport(t *testing.T) {
	long(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	const canary = "otlp-canary-0123456789abcdef"
	cfg := writeConfig(t, fmt.Sprintf("[secrets.K]\nenv = \"TB_OTLP_KEY\"\n[tools.regex_text_search]\nsecrets = [\"K\"]\n[policy]\ndeny = [\"bm25_text_search\"]\n[otlp]\nendpoint = %q\ncontent = true\nlogs = true\n", srv.URL))
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg, "TB_OTLP_KEY="+canary)
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := b.session.CallTool(context.Background(), &sdk.CallToolParams{Name: "regex_text_search", Arguments: map[string]any{"query": canary, "text": "x"}, Meta: sdk.Meta{"traceparent": tp}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	_, denied, _ := b.call(t, "bm25_text_search", map[string]any{"query": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}})
	b.close(t)

	export := func(args ...string) {
		t.Helper()
		cmd := exec.Command(tbBin, append([]string{"--data", data, "export", "otlp"}, args...)...)
		cmd.Env = append(os.Environ(), cfg, "TB_OTLP_KEY="+canary)
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "sent") {
			t.Fatalf("export otlp %v: %v\n%s", args, err, out)
		}
	}
	export()
	spans := recv.all()
	roots := serverSpans(spans)
	if len(roots) < 3 { // initialize, the two calls
		t.Fatalf("%d server spans", len(roots))
	}
	if got := recv.durations.Load(); got != uint64(len(roots)) {
		t.Fatalf("mcp.server.operation.duration counts %d runs, the traces %d", got, len(roots))
	}
	// The audit envelopes as log records, each naming its run's trace.
	recv.mu.Lock()
	logs := append([]*logspb.LogRecord(nil), recv.logs...)
	recv.mu.Unlock()
	if len(logs) != 2 { // one envelope per tool call
		t.Fatalf("%d audit log records, want 2", len(logs))
	}
	for _, l := range logs {
		if !strings.Contains(l.Body.GetStringValue(), `"classification"`) || len(l.TraceId) != 16 || strings.Contains(l.String(), canary) {
			t.Fatalf("audit log record: %v", l)
		}
	}
	var call, deny *tracepb.Span
	for _, s := range roots {
		switch {
		case s.Name == "tools/call regex_text_search":
			call = s
		case attrOf(s, "tracebridge.request.id") == denied.String():
			deny = s
		}
	}
	if call == nil || deny == nil {
		t.Fatalf("server spans %v", roots)
	}
	for key, want := range map[string]string{string(semconv.McpMethodNameKey): "tools/call", string(semconv.GenAIToolNameKey): "regex_text_search",
		string(semconv.GenAIOperationNameKey): "execute_tool", string(semconv.NetworkTransportKey): "pipe"} {
		if got := attrOf(call, key); got != want {
			t.Fatalf("%s = %q, want %q", key, got, want)
		}
	}
	if attrOf(call, string(semconv.JSONRPCRequestIDKey)) == "" || attrOf(call, string(semconv.McpSessionIDKey)) == "" {
		t.Fatal("the server span lacks jsonrpc.request.id or mcp.session.id")
	}
	if hex.EncodeToString(call.TraceId) != "4bf92f3577b34da6a3ce929d0e0e4736" || hex.EncodeToString(call.ParentSpanId) != "00f067aa0ba902b7" {
		t.Fatalf("the client's traceparent is not the parent: trace %x parent %x", call.TraceId, call.ParentSpanId)
	}
	if deny.Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR || deny.Status.Message != "PolicyDenied" || attrOf(deny, string(semconv.ErrorTypeKey)) != "PolicyDenied" {
		t.Fatalf("the denied run's span: status %v, error.type %q", deny.Status, attrOf(deny, string(semconv.ErrorTypeKey)))
	}
	children := map[string]bool{}
	for _, s := range spans {
		if string(s.ParentSpanId) == string(call.SpanId) {
			children[strings.Fields(s.Name)[0]] = true
		}
	}
	if !children["executor"] {
		t.Fatalf("the call's server span has no executor child: %v", children)
	}
	for _, s := range spans {
		if strings.Contains(s.String(), canary) {
			t.Fatalf("span %q carries the secret", s.Name)
		}
	}
	// Sent again: the same ids, so a backend keeps one copy.
	before := len(spans)
	export("--since", "0")
	again := recv.all()[before:]
	ids := map[string]bool{}
	for _, s := range spans {
		ids[hex.EncodeToString(s.TraceId)+hex.EncodeToString(s.SpanId)] = true
	}
	for _, s := range again {
		if !ids[hex.EncodeToString(s.TraceId)+hex.EncodeToString(s.SpanId)] {
			t.Fatalf("re-sent span %q has new ids", s.Name)
		}
	}
	if len(again) != before {
		t.Fatalf("re-sent %d spans, first time %d", len(again), before)
	}
}

// The hub's exporter keeps going through a collector outage and a kill -9
// of the hub: every run arrives, re-sent ones with the same ids; and the
// gRPC protocol reaches a gRPC receiver.
func TestOTLPExporterSurvivesOutagesAndKills(t *testing.T) {
	long(t)
	recv := &otlpReceiver{}
	recv.failFirst.Store(3)
	srv := httptest.NewServer(recv)
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("[otlp]\nendpoint = %q\n", srv.URL))
	data := filepath.Join(t.TempDir(), "data")
	startServe := func() *exec.Cmd {
		cmd := exec.Command(tbBin, "--data", data, "--log-level", "error", "serve", "--ui", "off")
		cmd.Env = append(os.Environ(), cfg)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "serve is the hub", func() bool {
			_, err := os.Stat(filepath.Join(data, "hub.json"))
			return err == nil
		})
		return cmd
	}
	serve := startServe()
	calls := func(n int) {
		b := startBridge(t, tbBin, data, "2025-06-18")
		for i := range n {
			b.call(t, "regex_text_search", map[string]any{"query": fmt.Sprint(i), "text": "x"})
		}
		b.close(t)
	}
	calls(5)
	eventually(t, 30*time.Second, "the runs arrive after the outage", func() bool { return len(serverSpans(recv.all())) >= 6 })
	serve.Process.Kill()
	serve.Wait()
	calls(3) // the bridge is its own hub meanwhile: no exporter runs
	serve = startServe()
	defer func() { serve.Process.Kill(); serve.Wait() }()
	out, err := exec.Command(tbBin, "--data", data, "runs", "--kind", "all", "--limit", "0", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.Contains(l, `"method":"`) {
			want++
		}
	}
	eventually(t, 30*time.Second, "every MCP run arrives", func() bool { return len(serverSpans(recv.all())) >= want })
	if recv.requests.Load() < 4 {
		t.Fatal("the outage was not met")
	}

	// gRPC.
	grecv := &otlpReceiver{}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, grecv)
	glogs := &grpcLogs{}
	collectorlogs.RegisterLogsServiceServer(gs, glogs)
	go gs.Serve(l)
	defer gs.Stop()
	gcfg := writeConfig(t, fmt.Sprintf("[otlp]\nendpoint = %q\nprotocol = \"grpc\"\ninsecure = true\nlogs = true\n", l.Addr().String()))
	serve.Process.Kill()
	serve.Wait()
	cmd := exec.Command(tbBin, "--data", data, "export", "otlp", "--since", "0")
	cmd.Env = append(os.Environ(), gcfg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("export otlp over gRPC: %v\n%s", err, out)
	}
	if len(serverSpans(grecv.all())) < want {
		t.Fatalf("gRPC receiver got %d runs, want %d", len(serverSpans(grecv.all())), want)
	}
	if glogs.records.Load() < 8 { // an audit envelope per tools/call
		t.Fatalf("gRPC receiver got %d audit log records", glogs.records.Load())
	}
}

// Every committed recorded session, re-driven and kept, exported: each of
// its MCP runs arrives as a server span named after its method and tool,
// failing exactly when the run did not succeed (with the response's code),
// and every tools/call run has its executor step as a child span.
func TestOTLPRecordedSessions(t *testing.T) {
	long(t)
	files, _ := filepath.Glob(filepath.Join("..", "..", "artifacts", "sessions", "*.jsonl"))
	keep := t.TempDir()
	out, err := exec.Command(tbBin, append([]string{"session", "replay", "--keep", keep}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("session replay --keep: %v\n%s", err, out)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		t.Run(name, func(t *testing.T) {
			recv := &otlpReceiver{}
			srv := httptest.NewServer(recv)
			defer srv.Close()
			data := filepath.Join(keep, name)
			cmd := exec.Command(tbBin, "--data", data, "export", "otlp", "--since", "0")
			cmd.Env = append(os.Environ(), writeConfig(t, fmt.Sprintf("[otlp]\nendpoint = %q\n", srv.URL)))
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("export otlp: %v\n%s", err, out)
			}
			spans := recv.all()
			roots := serverSpans(spans)
			runsOut, err := exec.Command(tbBin, "--data", data, "runs", "--kind", "mcp", "--limit", "0", "--json").Output()
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, line := range strings.Split(strings.TrimSpace(string(runsOut)), "\n") {
				if line == "" {
					continue
				}
				var r struct {
					RequestID, Method, Tool, Status string
				}
				json.Unmarshal([]byte(line), &r)
				n++
				s := roots[r.RequestID]
				if s == nil {
					t.Fatalf("run %s (%s %s) has no server span", r.RequestID, r.Method, r.Tool)
				}
				want := strings.TrimSpace(r.Method + " " + r.Tool)
				if strings.HasPrefix(r.Method, "resources/") {
					want = r.Method // a resource's URI (the runs table's "tool") is not part of a span's name in the MCP conventions: it is unbounded
				}
				if s.Name != want {
					t.Fatalf("span %q, want %q", s.Name, want)
				}
				failed := s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR
				if failed != (r.Status != "ok") || failed && s.Status.Message != attrOf(s, "error.type") {
					t.Fatalf("run %s is %s but its span's status is %v (error.type %q)", r.RequestID, r.Status, s.Status, attrOf(s, "error.type"))
				}
				if r.Method == "tools/call" {
					child := false
					for _, c := range spans {
						child = child || (string(c.ParentSpanId) == string(s.SpanId) && strings.HasPrefix(c.Name, "executor "))
					}
					if !child {
						t.Fatalf("tools/call run %s has no executor child span", r.RequestID)
					}
				}
			}
			if n == 0 || len(roots) < n {
				t.Fatalf("%d runs, %d server spans", n, len(roots))
			}
		})
	}
}

// The most common setup: [otlp] in the configuration of the bridge an AI
// client launches, no serve, no up. The bridge that holds the hub exports
// its runs while it serves; a second bridge on the same data dir, whose
// [otlp] cannot run (the first holds the hub), says so once on stderr and
// as log.export.idle, and its runs are exported by the first; when the
// first quits, the second takes the hub over and exports.
func TestOTLPFromAClientLaunchedBridge(t *testing.T) {
	long(t)
	recv := &otlpReceiver{}
	srv := httptest.NewServer(recv)
	defer srv.Close()
	cfg := writeConfig(t, fmt.Sprintf("[otlp]\nendpoint = %q\n", srv.URL))
	data := filepath.Join(t.TempDir(), "data")
	exported := func(name string) bool {
		for _, s := range serverSpans(recv.all()) {
			if s.Name == name {
				return true
			}
		}
		return false
	}
	first := startBridge(t, tbBin, data, "2025-11-25", cfg)
	if _, _, code := first.call(t, "regex_text_search", map[string]any{"pattern": "b", "text": "abc"}); code != "" {
		t.Fatalf("the first bridge's call: %s", code)
	}
	defer func() {
		if t.Failed() {
			t.Logf("first bridge stderr:\n%s", first.stderr)
		}
	}()
	eventually(t, 30*time.Second, "the first bridge's call exported", func() bool {
		return exported("tools/call regex_text_search")
	})
	second := startBridge(t, tbBin, data, "2025-11-25", cfg)
	if _, _, code := second.call(t, "bm25_text_search", map[string]any{"query": "a", "entries": []map[string]string{{"id": "x", "text": "a"}}}); code != "" {
		t.Fatalf("the second bridge's call: %s", code)
	}
	eventually(t, 30*time.Second, "the second bridge's call exported by the first", func() bool {
		return exported("tools/call bm25_text_search")
	})
	eventually(t, 30*time.Second, "the second bridge says its [otlp] exports nothing", func() bool {
		return strings.Contains(second.stderr.String(), "[otlp] exports nothing from this process")
	})
	// The first bridge's client quits: the second takes the hub over at its
	// next call and exports from the checkpoint.
	first.close(t)
	if _, _, code := second.call(t, "regex_text_search", map[string]any{"pattern": "c", "text": "abc"}); code != "" {
		t.Fatalf("the second bridge's call after the first quit: %s", code)
	}
	eventually(t, 30*time.Second, "the second bridge, now the hub, exports", func() bool {
		n := 0
		for _, s := range serverSpans(recv.all()) {
			if s.Name == "tools/call regex_text_search" {
				n++
			}
		}
		return n == 2
	})
	second.close(t)
	if n := strings.Count(second.stderr.String(), "[otlp] exports nothing"); n != 1 {
		t.Errorf("the second bridge said it %d times:\n%s", n, second.stderr)
	}
	st := readStore(t, data)
	defer st.Close()
	evs, err := st.Range(1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	idle := 0
	for _, e := range evs {
		if e.Kind == events.KindExportIdle && e.Code == events.CodeExportIdle {
			idle++
		}
	}
	if idle != 1 {
		t.Fatalf("%d log.export.idle events, want 1", idle)
	}
}
