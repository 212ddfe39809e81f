package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploggrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlplog/otlploghttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/export/otlp"
	"github.com/tracebridge/tracebridge/hub"
)

// otlpHeaders are [otlp] headers with their secret references resolved.
func (m *Main) otlpHeaders(c *config.Config) map[string]string {
	headers := map[string]string{}
	for k, v := range c.OTLP.Headers {
		headers[k] = config.ExpandSecrets(v, func(name string) string { return m.secretValue(c, name) })
	}
	return headers
}

// otlpHTTPClient is the HTTP exporters' client: it never follows a
// redirect, so the [otlp] headers (API keys) and the traces go only to the
// configured endpoint; a redirect is an export failure, logged and retried.
var otlpHTTPClient = &http.Client{
	Transport:     http.DefaultTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// spanExporter is the official OTLP exporter [otlp] asks for.
func (m *Main) spanExporter(ctx context.Context, c *config.Config) (sdktrace.SpanExporter, error) {
	headers := m.otlpHeaders(c)
	if c.OTLP.Protocol == "grpc" {
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(c.OTLP.Endpoint), otlptracegrpc.WithHeaders(headers),
			otlptracegrpc.WithRetry(otlptracegrpc.RetryConfig{Enabled: false})}
		if c.OTLP.Insecure {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	}
	return otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(strings.TrimSuffix(c.OTLP.Endpoint, "/")+"/v1/traces"),
		otlptracehttp.WithHeaders(headers), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}), otlptracehttp.WithHTTPClient(otlpHTTPClient))
}

// metricExporter is the OTLP metric exporter beside spanExporter.
func (m *Main) metricExporter(ctx context.Context, c *config.Config) (sdkmetric.Exporter, error) {
	headers := m.otlpHeaders(c)
	delta := func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
	if c.OTLP.Protocol == "grpc" {
		opts := []otlpmetricgrpc.Option{otlpmetricgrpc.WithEndpoint(c.OTLP.Endpoint), otlpmetricgrpc.WithHeaders(headers),
			otlpmetricgrpc.WithTemporalitySelector(delta), otlpmetricgrpc.WithRetry(otlpmetricgrpc.RetryConfig{Enabled: false})}
		if c.OTLP.Insecure {
			opts = append(opts, otlpmetricgrpc.WithInsecure())
		}
		return otlpmetricgrpc.New(ctx, opts...)
	}
	return otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(strings.TrimSuffix(c.OTLP.Endpoint, "/")+"/v1/metrics"),
		otlpmetrichttp.WithHeaders(headers), otlpmetrichttp.WithTemporalitySelector(delta), otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}),
		otlpmetrichttp.WithHTTPClient(otlpHTTPClient))
}

// newExporter is the one way an OTLP exporter of the log is built.
func (m *Main) newExporter(ctx context.Context, c *config.Config, dir hub.DataDir, node *hub.Node, log *slog.Logger) (*otlp.Exporter, func(), error) {
	spans, err := m.spanExporter(ctx, c)
	if err != nil {
		return nil, nil, fmt.Errorf("[otlp]: %w", err)
	}
	metrics, err := m.metricExporter(ctx, c)
	if err != nil {
		return nil, nil, fmt.Errorf("[otlp]: %w", err)
	}
	x := &otlp.Exporter{Log: node, Spans: spans, Metrics: metrics, Options: otlp.Options{Resource: otlpResource(c), Content: c.OTLP.Content},
		State: dir.OTLPState(), Logger: log}
	if c.OTLP.Logs {
		headers := m.otlpHeaders(c)
		var logs sdklog.Exporter
		if c.OTLP.Protocol == "grpc" {
			opts := []otlploggrpc.Option{otlploggrpc.WithEndpoint(c.OTLP.Endpoint), otlploggrpc.WithHeaders(headers),
				otlploggrpc.WithRetry(otlploggrpc.RetryConfig{Enabled: false})}
			if c.OTLP.Insecure {
				opts = append(opts, otlploggrpc.WithInsecure())
			}
			logs, err = otlploggrpc.New(ctx, opts...)
		} else {
			logs, err = otlploghttp.New(ctx, otlploghttp.WithEndpointURL(strings.TrimSuffix(c.OTLP.Endpoint, "/")+"/v1/logs"),
				otlploghttp.WithHeaders(headers), otlploghttp.WithRetry(otlploghttp.RetryConfig{Enabled: false}), otlploghttp.WithHTTPClient(otlpHTTPClient))
		}
		if err != nil {
			return nil, nil, fmt.Errorf("[otlp] logs: %w", err)
		}
		x.Logs = logs
	}
	return x, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		spans.Shutdown(sctx)
		metrics.Shutdown(sctx)
		if x.Logs != nil {
			x.Logs.Shutdown(sctx)
		}
	}, nil
}

// secretValue resolves one secret reference of c here (env or file), ""
// when it cannot.
func (m *Main) secretValue(c *config.Config, name string) string {
	ref, ok := c.Secrets[name]
	switch {
	case !ok:
		return ""
	case ref.Env != "":
		return m.Getenv(ref.Env)
	}
	b, err := os.ReadFile(ref.File)
	if err != nil {
		return ""
	}
	return strings.TrimRight(string(b), "\r\n")
}

// otlpResource names the exported spans' service.
func otlpResource(c *config.Config) *resource.Resource {
	attrs := []attribute.KeyValue{attribute.String("service.name", "tracebridge"), attribute.String("service.version", Version)}
	for k, v := range c.OTLP.Resource {
		attrs = append(attrs, attribute.String(k, v))
	}
	return resource.NewSchemaless(attrs...)
}

const exportOTLPHelp = `export otlp [--since SEQ|TIME] [--config FILE]

Sends the log's runs to the OTLP endpoint of [otlp] in tracebridge.toml once, up
to the head, and exits: a backfill (of the runs before the exporter ran, or
after an outage). Without --since it starts at the exporter's checkpoint
(export/otlp.json in the data dir), which it moves forward. Runs keep their
trace and span ids however often they are sent.`

func runExportOTLP(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("export otlp")
	since := fs.String("since", "", "start after this `SEQ`, or at this TIME (RFC 3339, or a duration ago such as 24h)")
	cfgPath := fs.String("config", "", "tracebridge.toml `FILE` with [otlp]")
	if err := m.parse(fs, exportOTLPHelp, args); err != nil {
		return err
	}
	c, err := m.loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if c.OTLP.Endpoint == "" {
		return usageError{"tracebridge.toml has no [otlp] endpoint: add one (see `tracebridge config --help`)"}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	node, err := m.openLog(ctx, "export")
	if err != nil {
		return err
	}
	defer node.Close()
	x, shutdown, err := m.newExporter(ctx, c, dir, node, m.logger())
	if err != nil {
		return err
	}
	defer shutdown()
	st, err := otlp.ReadState(dir.OTLPState())
	if err != nil {
		return err
	}
	from := st.Seq
	if *since != "" {
		if n, err := strconv.ParseUint(*since, 10, 64); err == nil {
			from = n
		} else if from, err = seqAt(ctx, node, m.Now(), *since); err != nil {
			return err
		}
	}
	bctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	x.Attempts = 5 // a one-shot backfill says what failed instead of retrying for ever
	n, err := x.Backfill(bctx, from)
	if err != nil {
		return err
	}
	if bctx.Err() != nil {
		return fmt.Errorf("the endpoint did not take the runs within 10 minutes (%d sent); run again to resume", n)
	}
	fmt.Fprintf(m.Stdout, "sent %d runs after seq %d to %s\n", n, from, c.OTLP.Endpoint)
	return nil
}

// seqAt is the seq before the first event at or after a time (RFC 3339, or
// a duration ago).
func seqAt(ctx context.Context, node *hub.Node, now time.Time, when string) (uint64, error) {
	var at time.Time
	if d, err := config.ParseDuration(when); err == nil {
		at = now.Add(-d)
	} else if t, err := time.Parse(time.RFC3339, when); err == nil {
		at = t
	} else {
		return 0, usageError{fmt.Sprintf("--since %q: want a seq (1234), an RFC 3339 time or a duration (24h, 7d)", when)}
	}
	return node.SeqBefore(ctx, at)
}
