package otlp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	sdklog "go.opentelemetry.io/otel/sdk/log"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/durable"
	"github.com/tracebridge/tracebridge/projections"
)

// Log is what the exporter reads.
type Log interface {
	Follow(ctx context.Context, from uint64, fn func(events.Event) error) error
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	Head(ctx context.Context) (uint64, events.Hash, error)
}

// Exporter sends every answered run to a span exporter, from a checkpoint.
type Exporter struct {
	Log   Log
	Spans sdktrace.SpanExporter
	// Metrics, when set, receives mcp.server.operation.duration for each
	// batch, once (a delta sent twice would count twice).
	Metrics sdkmetric.Exporter
	// Logs, when set, receives each audit envelope as a log record, with
	// the spans (at least once, like them).
	Logs    sdklog.Exporter
	Options Options
	// State is the checkpoint file: the seq of the last run exported.
	State  string
	Logger *slog.Logger
	// FlushEvery bounds how long a run waits to be sent. Zero: 1s.
	FlushEvery time.Duration
	// Attempts bounds the sends of one batch (a one-shot backfill gives
	// up and says why; the checkpoint stays). Zero: until accepted or the
	// context ends, as a running hub does.
	Attempts int

	// inflight holds the events of runs not answered yet, as the log
	// delivers them, so an answered run rarely needs a read of its own.
	inflight map[events.ID][]events.Event
	pending  []sdktrace.ReadOnlySpan
	hist     durations
	logs     auditLogs
	last     uint64 // seq of the newest run in pending
	runs     int
}

// maxBatch is how many runs one export sends at most.
const maxBatch = 256

// State is what the checkpoint file holds.
type State struct {
	Seq      uint64    `json:"seq"`
	Exported time.Time `json:"exported"`
	Runs     int       `json:"runs"`
}

// ReadState reads a checkpoint file (a missing one is seq 0).
func ReadState(path string) (State, error) {
	var s State
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return s, err
	}
	return s, json.Unmarshal(b, &s)
}

// Run follows the log from the checkpoint and exports each answered run,
// until ctx ends. A failed export is retried (with backoff) before the
// checkpoint moves, so nothing is skipped; a run may be sent twice, with the
// same ids.
func (x *Exporter) Run(ctx context.Context) error {
	st, err := ReadState(x.State)
	if err != nil {
		return fmt.Errorf("otlp checkpoint %s: %w", x.State, err)
	}
	every := x.FlushEvery
	if every <= 0 {
		every = time.Second
	}
	err = projections.FollowTicking(ctx, x.Log.Follow, st.Seq+1, every, func(e events.Event) error {
		if err := x.add(ctx, e); err != nil {
			return err
		}
		if x.runs >= maxBatch {
			return x.flush(ctx)
		}
		return nil
	}, func() error { return x.flush(ctx) })
	if ctx.Err() != nil {
		x.finalFlush(ctx)
	}
	return err
}

// FinalFlush bounds the last export of a process that stops cleanly.
const FinalFlush = 5 * time.Second

// finalFlush sends, within FinalFlush, what the log holds past the
// checkpoint when the process stops: a short-lived bridge a client
// launched for a few requests would otherwise leave its runs to the next
// process that holds the hub. What was gathered but not sent is gathered
// again from the checkpoint (it moves only on an accepted batch).
func (x *Exporter) finalFlush(parent context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(parent), FinalFlush)
	defer cancel()
	st, err := ReadState(x.State)
	if err != nil {
		return
	}
	x.pending, x.runs, x.last, x.inflight, x.hist = nil, 0, 0, nil, durations{}
	x.logs.take()
	if x.Attempts == 0 {
		x.Attempts = 2
	}
	if n, err := x.Backfill(ctx, st.Seq); err != nil && x.Logger != nil {
		x.Logger.Warn("the last OTLP export on the way out failed (the checkpoint stays; the next process holding the hub sends it)", "err", err)
	} else if n > 0 && x.Logger != nil {
		x.Logger.Info("exported the last runs on the way out", "runs", n)
	}
}

// Backfill exports the runs answered after seq from up to the log's head
// now, and moves the checkpoint forward when it passes it. It returns how
// many runs it sent.
func (x *Exporter) Backfill(ctx context.Context, from uint64) (int, error) {
	head, _, err := x.Log.Head(ctx)
	if err != nil {
		return 0, err
	}
	total := 0
	for next := from + 1; next <= head; {
		evs, after, err := x.Log.Range(ctx, next, 4096)
		if err != nil {
			return total, err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Seq > head {
				break
			}
			if err := x.add(ctx, e); err != nil {
				return total, err
			}
			if x.runs >= maxBatch {
				total += x.runs
				if err := x.flush(ctx); err != nil {
					return total, err
				}
			}
		}
		next = after
	}
	total += x.runs
	return total, x.flush(ctx)
}

// maxInflight bounds the runs held while they wait for their answer (runs
// that were never answered would otherwise grow it); past it they are read
// from the log when answered.
const maxInflight = 20_000

// add takes one event; an answered MCP request adds its run's spans.
func (x *Exporter) add(ctx context.Context, e events.Event) error {
	if e.RequestID.IsZero() {
		return nil
	}
	if x.inflight == nil || len(x.inflight) > maxInflight {
		x.inflight = map[events.ID][]events.Event{}
	}
	if e.Kind != events.KindMCPResponseSent {
		x.inflight[e.RequestID] = append(x.inflight[e.RequestID], e)
		return nil
	}
	evs := append(x.inflight[e.RequestID], e)
	delete(x.inflight, e.RequestID)
	if evs[0].Kind != events.KindMCPRequestReceived { // began before this follow (or was evicted): read it whole
		var err error
		if evs, err = x.Log.ByRequest(ctx, e.RequestID); err != nil {
			return err
		}
	}
	x.pending = append(x.pending, Spans(evs, x.Options)...)
	x.hist.add(evs)
	if x.Logs != nil {
		x.logs.add(x.Options.Resource, evs)
	}
	x.last = e.Seq
	x.runs++
	return nil
}

// flush exports what is pending, retrying until it is accepted or ctx
// ends, then moves the checkpoint.
func (x *Exporter) flush(ctx context.Context) error {
	if x.runs == 0 {
		return nil
	}
	backoff := 250 * time.Millisecond
	var records []sdklog.Record
	if x.Logs != nil {
		records = x.logs.take()
	}
	for attempt := 1; ; attempt++ {
		err := x.Spans.ExportSpans(ctx, x.pending)
		if err == nil && len(records) > 0 {
			if err = x.Logs.Export(ctx, records); permanent(err) {
				dropSignal(x, "logs", &x.Logs, err)
				err = nil
			}
		}
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return nil // the next run resumes from the checkpoint
		}
		if x.Attempts > 0 && attempt >= x.Attempts {
			return fmt.Errorf("otlp export failed %d times (the checkpoint stays; the next export resends): %w", attempt, err)
		}
		if x.Logger != nil {
			x.Logger.Warn("otlp export failed; retrying (the checkpoint stays)", "runs", x.runs, "err", err, "in", backoff)
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return nil
		}
		backoff = min(backoff*2, 30*time.Second)
	}
	if rm := x.hist.data(x.Options.Resource); rm != nil && x.Metrics != nil {
		switch err := x.Metrics.Export(ctx, rm); {
		case permanent(err):
			dropSignal(x, "metrics", &x.Metrics, err)
		case err != nil && x.Logger != nil:
			x.Logger.Warn("otlp metrics not sent (they are not resent: a delta would count twice)", "err", err)
		}
	}
	x.hist = durations{}
	st, err := ReadState(x.State)
	if err != nil {
		return err
	}
	if x.last > st.Seq { // a backfill from an earlier seq never moves it back
		b, _ := json.Marshal(State{Seq: x.last, Exported: time.Now().UTC(), Runs: st.Runs + x.runs})
		if err := durable.MkdirAll(filepath.Dir(x.State), 0o700); err != nil {
			return err
		}
		if err := durable.WriteFileAtomic(x.State, b, 0o600); err != nil {
			return err
		}
	}
	x.pending, x.runs = nil, 0
	return nil
}

// permanent reports whether an export error will not go away by sending
// again: the endpoint has no route for that signal (HTTP 404, 405 or 501;
// gRPC Unimplemented), as a traces-only collector answers metrics and logs.
func permanent(err error) bool {
	if err == nil {
		return false
	}
	if st, ok := status.FromError(err); ok && st.Code() == grpccodes.Unimplemented {
		return true
	}
	msg := err.Error()
	for _, s := range []string{": 404 ", ": 405 ", ": 501 ", "code = Unimplemented"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// dropSignal stops sending a signal the endpoint does not take, and says
// so once: traces go on.
func dropSignal[T any](x *Exporter, signal string, exp *T, err error) {
	var zero T
	*exp = zero
	if x.Logger != nil {
		x.Logger.Warn("the OTLP endpoint does not take "+signal+": this process sends it no more (traces still go); point [otlp] endpoint at a collector that takes them",
			"signal", signal, "err", err)
	}
}
