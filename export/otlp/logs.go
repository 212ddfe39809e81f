package otlp

import (
	"context"
	"encoding/json"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	sdklog "go.opentelemetry.io/otel/sdk/log"
	"go.opentelemetry.io/otel/sdk/resource"

	"github.com/tracebridge/tracebridge/events"
)

// auditLogs turns audit envelopes into OTLP log records (for a SIEM that
// reads OTLP): the envelope as the body, its seq, event id and chain hash as
// attributes, its classification's severity, and the run's trace and server
// span ids, so a log line leads to its trace. Records are built through an
// SDK logger (which sets the resource and scope) into a collecting
// processor; the exporter sends them with the spans.
type auditLogs struct {
	once     sync.Once
	logger   otellog.Logger
	mu       sync.Mutex
	captured []sdklog.Record
}

// collect is a Processor that keeps what is emitted.
type collect struct{ l *auditLogs }

func (c collect) Enabled(context.Context, sdklog.EnabledParameters) bool { return true }
func (c collect) OnEmit(_ context.Context, r *sdklog.Record) error {
	c.l.mu.Lock()
	c.l.captured = append(c.l.captured, r.Clone())
	c.l.mu.Unlock()
	return nil
}
func (collect) Shutdown(context.Context) error   { return nil }
func (collect) ForceFlush(context.Context) error { return nil }

func (a *auditLogs) add(res *resource.Resource, evs []events.Event) {
	a.once.Do(func() {
		opts := []sdklog.LoggerProviderOption{sdklog.WithProcessor(collect{a})}
		if res != nil {
			opts = append(opts, sdklog.WithResource(res))
		}
		a.logger = sdklog.NewLoggerProvider(opts...).Logger(Scope.Name, otellog.WithInstrumentationVersion(Scope.Version))
	})
	var req *events.Event
	for i := range evs {
		if evs[i].Kind == events.KindMCPRequestReceived && req == nil {
			req = &evs[i]
		}
	}
	for i := range evs {
		e := &evs[i]
		if e.Kind != events.KindExecutorAudit {
			continue
		}
		var r otellog.Record
		r.SetTimestamp(e.Time)
		r.SetObservedTimestamp(e.Time)
		r.SetEventName("tracebridge.audit")
		r.SetBody(attribute.StringValue(e.Attrs.Get(events.AttrEnvelope)))
		sev, text := otellog.SeverityInfo, "info"
		var env struct {
			Classification struct {
				Severity string `json:"severity"`
			} `json:"classification"`
		}
		if json.Unmarshal([]byte(e.Attrs.Get(events.AttrEnvelope)), &env) == nil {
			switch env.Classification.Severity {
			case "warning":
				sev, text = otellog.SeverityWarn, "warning"
			case "error":
				sev, text = otellog.SeverityError, "error"
			}
		}
		r.SetSeverity(sev)
		r.SetSeverityText(text)
		kv := []attribute.KeyValue{
			attribute.Int64("tracebridge.seq", int64(e.Seq)), attribute.String("tracebridge.event.id", e.ID.String()),
			attribute.String("tracebridge.hash", e.Hash.String()), attribute.String("tracebridge.request.id", e.RequestID.String()),
			attribute.String("tracebridge.outcome", string(e.Outcome)),
		}
		if e.Code != "" {
			kv = append(kv, attribute.String("error.type", string(e.Code)))
		}
		r.AddAttributes(kv...)
		ctx := context.Background()
		if req != nil {
			traceID := traceID(req.RequestID)
			if tp, ok := parseTraceparent(req.Traceparent); ok {
				traceID = tp.TraceID()
			}
			ctx = contextWithSpan(ctx, traceID, spanID(req.ID))
		}
		a.logger.Emit(ctx, r)
	}
}

// take returns the records emitted so far and forgets them.
func (a *auditLogs) take() []sdklog.Record {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.captured
	a.captured = nil
	return out
}
