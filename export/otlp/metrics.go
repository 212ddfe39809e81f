package otlp

import (
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"

	"github.com/tracebridge/tracebridge/events"
)

// durationBounds are the histogram's bucket boundaries in seconds, as the
// MCP conventions advise for mcp.server.operation.duration.
var durationBounds = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// durations aggregates answered runs into mcp.server.operation.duration:
// delta temporality, one data point per attribute set, over the runs of
// one export batch. (Sent at most once: a resent delta would count twice.)
type durations struct {
	points     map[attribute.Distinct]*metricdata.HistogramDataPoint[float64]
	start, end time.Time
}

func (d *durations) add(evs []events.Event) {
	var req, resp *events.Event
	for i := range evs {
		switch evs[i].Kind {
		case events.KindMCPRequestReceived:
			if req == nil {
				req = &evs[i]
			}
		case events.KindMCPResponseSent:
			resp = &evs[i]
		}
	}
	if req == nil || resp == nil {
		return
	}
	kv := []attribute.KeyValue{semconv.McpMethodNameKey.String(req.Attrs.Get(events.AttrMethod)), semconv.NetworkTransportPipe}
	if t := req.Attrs.Get(events.AttrTool); t != "" && req.Attrs.Get(events.AttrMethod) == "tools/call" {
		kv = append(kv, semconv.GenAIToolNameKey.String(t), semconv.GenAIOperationNameExecuteTool)
	}
	if resp.Code != "" {
		kv = append(kv, semconv.ErrorTypeKey.String(string(resp.Code)))
	}
	set := attribute.NewSet(kv...)
	if d.points == nil {
		d.points = map[attribute.Distinct]*metricdata.HistogramDataPoint[float64]{}
	}
	p := d.points[set.Equivalent()]
	if p == nil {
		p = &metricdata.HistogramDataPoint[float64]{Attributes: set, Bounds: durationBounds, BucketCounts: make([]uint64, len(durationBounds)+1)}
		d.points[set.Equivalent()] = p
	}
	secs := resp.Time.Sub(req.Time).Seconds()
	p.Count++
	p.Sum += secs
	i := 0
	for i < len(durationBounds) && secs > durationBounds[i] {
		i++
	}
	p.BucketCounts[i]++
	if mn, ok := p.Min.Value(); !ok || secs < mn {
		p.Min = metricdata.NewExtrema(secs)
	}
	if mx, ok := p.Max.Value(); !ok || secs > mx {
		p.Max = metricdata.NewExtrema(secs)
	}
	if d.start.IsZero() || req.Time.Before(d.start) {
		d.start = req.Time
	}
	if resp.Time.After(d.end) {
		d.end = resp.Time
	}
}

// data is the batch as OTLP metrics, nil when it holds no run.
func (d *durations) data(res *resource.Resource) *metricdata.ResourceMetrics {
	if len(d.points) == 0 {
		return nil
	}
	var m mcpconv.ServerOperationDuration
	h := metricdata.Histogram[float64]{Temporality: metricdata.DeltaTemporality}
	for _, p := range d.points {
		p.StartTime, p.Time = d.start, d.end
		h.DataPoints = append(h.DataPoints, *p)
	}
	if res == nil {
		res = resource.Empty()
	}
	return &metricdata.ResourceMetrics{Resource: res, ScopeMetrics: []metricdata.ScopeMetrics{{Scope: Scope,
		Metrics: []metricdata.Metrics{{Name: m.Name(), Description: m.Description(), Unit: m.Unit(), Data: h}}}}}
}
