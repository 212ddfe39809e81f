package export

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store"
)

// AuditLine is one line of `export audit` (docs/audit-export.schema.json):
// a tool call's audit envelope, or a security event (auditKinds), with the
// event that carried it and the signed checkpoint that covers it.
type AuditLine struct {
	Seq         uint64         `json:"seq"`
	EventID     events.ID      `json:"eventId"`
	Time        time.Time      `json:"time"`
	Hash        string         `json:"hash"`
	Kind        string         `json:"kind"`
	RequestID   events.ID      `json:"requestId,omitzero"`
	SessionID   events.ID      `json:"sessionId,omitzero"`
	Traceparent string         `json:"traceparent,omitempty"`
	Tool        string         `json:"tool,omitempty"`
	Outcome     events.Outcome `json:"outcome"`
	Code        events.Code    `json:"code,omitempty"`
	DurationMs  float64        `json:"durationMs,omitempty"`
	// Attrs are a security event's attributes, as recorded (redacted at
	// the source), each whole; a tool call's are in its envelope.
	Attrs    map[string]string `json:"attrs,omitempty"`
	Envelope json.RawMessage   `json:"envelope,omitempty"`
	// EnvelopeCut is the envelope's text when it is not JSON: cut by a log
	// older than the payload store (over 4 KiB), or over the payload limit.
	EnvelopeCut string            `json:"envelopeCut,omitempty"`
	Checkpoint  *store.Checkpoint `json:"checkpoint"`
}

// AuditLog is what an audit export reads: the log's events, live ones,
// payloads and checkpoints. A hub.Node is one.
type AuditLog interface {
	events.PayloadReader
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
	Follow(ctx context.Context, from uint64, fn func(events.Event) error) error
	Checkpoint(ctx context.Context) (store.Checkpoint, error)
}

// auditKinds are what the audit export writes: tool calls' envelopes and
// the security events — refused requests and appends, tool descriptors
// pinned, changed, removed, accepted and refused, configuration put in
// force, approvals and proposals decided, the log archived.
var auditKinds = map[string]bool{
	events.KindExecutorAudit:   true,
	events.KindMCPHTTPRejected: true, events.KindUIRejected: true, events.KindStreamRefused: true, events.KindAppendRejected: true,
	events.KindUpstreamToolPinned: true, events.KindUpstreamToolChanged: true, events.KindUpstreamToolRemoved: true,
	events.KindUpstreamToolAccepted: true, events.KindUpstreamRefused: true, events.KindUpstreamOfferRefused: true,
	events.KindConfigLoaded: true, events.KindApprovalDecided: true, events.KindProposalApproved: true,
	events.KindProposalRejected: true, events.KindArchived: true,
	events.KindConfigWeakened: true, events.KindGuardArgs: true, events.KindGuardResult: true, events.KindUpstreamToolFlagged: true,
	events.KindUpstreamStarted: true,
}

// Format is how an audit line is written.
type Format string

const (
	// JSONL writes AuditLine as it is (docs/audit-export.schema.json).
	JSONL Format = "jsonl"
	// ECSFormat writes each line as an Elastic Common Schema document.
	ECSFormat Format = "ecs"
)

// Audit writes audit lines, each after a checkpoint that covers it.
type Audit struct {
	log     AuditLog
	w       *bufio.Writer
	since   time.Time
	format  Format
	pending []events.Event
}

// NewAudit writes the audit lines of log to w in format; since, when set,
// leaves out those recorded before it.
func NewAudit(log AuditLog, w io.Writer, since time.Time, format Format) *Audit {
	return &Audit{log: log, w: bufio.NewWriter(w), since: since, format: format}
}

// UpToHead signs a checkpoint of the head and writes every envelope from
// seq from that it covers.
func (x *Audit) UpToHead(ctx context.Context, from uint64) error {
	cp, err := x.log.Checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("sign a checkpoint to cover the export: %w", err)
	}
	for from <= cp.Seq {
		evs, next, err := x.log.Range(ctx, from, 4096)
		if err != nil {
			return err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			if e.Seq <= cp.Seq {
				x.add(e)
			}
		}
		from = next
	}
	return x.flush(ctx, &cp)
}

// Follow writes what the log holds from seq from, then what it commits, a
// batch at a time after the checkpoint that covers it (about once a
// second), until ctx ends.
func (x *Audit) Follow(ctx context.Context, from uint64) error {
	return projections.FollowTicking(ctx, x.log.Follow, from, time.Second, func(e events.Event) error {
		x.add(e)
		return nil
	}, func() error {
		if len(x.pending) == 0 {
			return nil
		}
		cp, err := x.log.Checkpoint(ctx)
		if err != nil {
			return err
		}
		return x.flush(ctx, &cp)
	})
}

func (x *Audit) add(e events.Event) {
	if !auditKinds[e.Kind] || (!x.since.IsZero() && e.Time.Before(x.since)) {
		return
	}
	x.pending = append(x.pending, e)
}

// flush writes the pending envelopes cp covers.
func (x *Audit) flush(ctx context.Context, cp *store.Checkpoint) error {
	enc := json.NewEncoder(x.w)
	enc.SetEscapeHTML(false)
	kept := x.pending[:0]
	for _, e := range x.pending {
		if e.Seq > cp.Seq {
			kept = append(kept, e)
			continue
		}
		l, err := auditLineOf(ctx, x.log, e, cp)
		if err != nil {
			return err
		}
		var v any = &l
		if x.format == ECSFormat {
			if v, err = ECS(l); err != nil {
				return err
			}
		}
		if err := enc.Encode(v); err != nil {
			return err
		}
	}
	x.pending = kept
	return x.w.Flush()
}

func auditLineOf(ctx context.Context, r events.PayloadReader, e events.Event, cp *store.Checkpoint) (AuditLine, error) {
	l := AuditLine{Seq: e.Seq, EventID: e.ID, Time: e.Time, Hash: e.Hash.String(), Kind: e.Kind, RequestID: e.RequestID, SessionID: e.SessionID,
		Traceparent: e.Traceparent, Tool: e.Attrs.Get(events.AttrTool), Outcome: e.Outcome, Code: e.Code, DurationMs: e.DurationMs, Checkpoint: cp}
	if e.Kind != events.KindExecutorAudit {
		l.Attrs = map[string]string{}
		for k, v := range e.Attrs.All() {
			whole, err := events.ResolveValue(ctx, r, v)
			if err != nil {
				return l, fmt.Errorf("attribute %s of seq %d: %w", k, e.Seq, err)
			}
			l.Attrs[k] = whole
		}
		return l, nil
	}
	env, err := events.ResolveValue(ctx, r, e.Attrs.Get(events.AttrEnvelope)) // over 4 KiB: whole in the payload store
	if err != nil {
		return l, fmt.Errorf("the envelope of seq %d: %w", e.Seq, err)
	}
	if json.Valid([]byte(env)) {
		l.Envelope = json.RawMessage(env)
	} else {
		l.EnvelopeCut = env
	}
	return l, nil
}
