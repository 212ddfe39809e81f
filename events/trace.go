package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"regexp"
)

// TraceID is the trace of a run whose client sent no traceparent: derived
// from its request id, so a run exported twice has the same trace.
func TraceID(req ID) [16]byte {
	sum := sha256.Sum256(append([]byte("tracebridge trace\x00"), req[:]...))
	var id [16]byte
	copy(id[:], sum[:16])
	return id
}

// SpanID is the span event ev opens (for the request, the server span):
// the same on every export, and known before the event is stored.
func SpanID(ev ID) [8]byte {
	sum := sha256.Sum256(append([]byte("tracebridge span\x00"), ev[:]...))
	var id [8]byte
	copy(id[:], sum[:8])
	return id
}

var traceparentRE = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-([0-9a-f]{2})$`)

// ValidTraceparent reports whether tp is a W3C traceparent the bridge
// keeps (what a client sends in _meta is recorded only when it is one).
func ValidTraceparent(tp string) bool { return traceparentRE.MatchString(tp) }

// Traceparent is the W3C trace context of the span event ev opens, in the
// trace of the client's traceparent tp (its flags kept) or, when tp is not
// a valid one, in request req's own trace: what the bridge sends a hop it
// calls, so that hop's spans are children of the bridge's.
func Traceparent(tp string, req, ev ID) string {
	span := SpanID(ev)
	if m := traceparentRE.FindStringSubmatch(tp); m != nil && m[1] != "00000000000000000000000000000000" {
		return "00-" + m[1] + "-" + hex.EncodeToString(span[:]) + "-" + m[2]
	}
	trace := TraceID(req)
	return "00-" + hex.EncodeToString(trace[:]) + "-" + hex.EncodeToString(span[:]) + "-01"
}

// TraceHex is the trace a request's spans are exported in, as hex: the
// client's traceparent tp's when it is a valid one, else request req's own
// (TraceID). Records that name it (an ECS document's trace.id) meet the
// spans of the same run.
func TraceHex(tp string, req ID) string {
	if m := traceparentRE.FindStringSubmatch(tp); m != nil && m[1] != "00000000000000000000000000000000" {
		return m[1]
	}
	trace := TraceID(req)
	return hex.EncodeToString(trace[:])
}

type traceparentKey struct{}

// WithTraceparent is ctx carrying the W3C traceparent the client sent with
// the request being served (an MCP _meta's), for a hop the request makes
// further down (an upstream's prompts/get, resources/read).
func WithTraceparent(ctx context.Context, tp string) context.Context {
	return context.WithValue(ctx, traceparentKey{}, tp)
}

// TraceparentOf is the client's traceparent ctx carries ("" for none).
func TraceparentOf(ctx context.Context) string {
	tp, _ := ctx.Value(traceparentKey{}).(string)
	return tp
}
