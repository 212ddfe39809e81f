package otlp

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// tracesOnly is an OTLP/HTTP endpoint with a traces route and none for
// metrics or logs (as Jaeger's is): it counts the requests of each path.
type tracesOnly struct {
	mu   sync.Mutex
	hits map[string]int
}

func (e *tracesOnly) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.mu.Lock()
	e.hits[r.URL.Path]++
	e.mu.Unlock()
	if r.URL.Path != "/v1/traces" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.WriteHeader(http.StatusOK) // an empty ExportTraceServiceResponse
}

func (e *tracesOnly) count(path string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.hits[path]
}

// An endpoint without a metrics or logs route is told once, not every
// interval forever: the exporter says so once and sends that signal no
// more, traces go on, and the checkpoint moves (before, logs = true
// against such an endpoint retried the whole batch forever).
func TestASignalTheEndpointDoesNotTakeIsDroppedOnce(t *testing.T) {
	ctx := context.Background()
	ep := &tracesOnly{hits: map[string]int{}}
	srv := httptest.NewServer(ep)
	defer srv.Close()
	spans, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(srv.URL+"/v1/metrics"), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	logs, err := otlploghttp.New(ctx, otlploghttp.WithEndpointURL(srv.URL+"/v1/logs"), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	data := t.TempDir()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(data, "d")), Role: hub.Elect, Name: "otlp-signals"})
	em := events.NewEmitter(node, events.EmitterOptions{})
	run := func() {
		req := events.NewID()
		attrs := events.A(events.AttrMethod, "tools/call", events.AttrTool, "regex_text_search")
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK, Attrs: attrs})
		em.Emit(events.Event{Kind: events.KindExecutorAudit, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrEnvelope, `{"tool":"regex_text_search","result":"ok"}`)})
		em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK, Attrs: attrs})
		if err := em.FlushAll(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var said bytes.Buffer
	x := &Exporter{Log: node, Spans: spans, Metrics: metrics, Logs: logs, State: filepath.Join(data, "otlp.json"), Attempts: 3,
		Logger: slog.New(slog.NewTextHandler(&said, nil))}
	var from uint64
	for i := range 3 {
		run()
		if n, err := x.Backfill(ctx, from); err != nil || n != 1 {
			t.Fatalf("backfill %d: %d runs, %v", i, n, err)
		}
		st, _ := ReadState(x.State)
		from = st.Seq
	}
	if got := ep.count("/v1/traces"); got != 3 {
		t.Errorf("%d trace exports, want 3 (one per backfill, none repeated)", got)
	}
	if m, l := ep.count("/v1/metrics"), ep.count("/v1/logs"); m != 1 || l != 1 {
		t.Errorf("metrics asked %d times, logs %d: want once each, then never again", m, l)
	}
	for _, signal := range []string{"metrics", "logs"} {
		if n := strings.Count(said.String(), "does not take "+signal); n != 1 {
			t.Errorf("said %d times that the endpoint does not take %s:\n%s", n, signal, said.String())
		}
	}
}
