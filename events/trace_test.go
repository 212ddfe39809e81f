package events

import (
	"encoding/hex"
	"strings"
	"testing"
)

// A hop's traceparent keeps the client's trace and flags and names the
// hop's own span; without a valid client traceparent it is in the
// request's own trace (the one the OTLP export gives the run).
func TestTraceparent(t *testing.T) {
	req, ev := NewID(), NewID()
	span := SpanID(ev)
	own := TraceID(req)
	for tp, want := range map[string]string{
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "00-4bf92f3577b34da6a3ce929d0e0e4736-" + hex.EncodeToString(span[:]) + "-01",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00": "00-4bf92f3577b34da6a3ce929d0e0e4736-" + hex.EncodeToString(span[:]) + "-00",
		"": "00-" + hex.EncodeToString(own[:]) + "-" + hex.EncodeToString(span[:]) + "-01",
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "00-" + hex.EncodeToString(own[:]) + "-" + hex.EncodeToString(span[:]) + "-01",
		"not a traceparent": "00-" + hex.EncodeToString(own[:]) + "-" + hex.EncodeToString(span[:]) + "-01",
	} {
		if got := Traceparent(tp, req, ev); got != want {
			t.Errorf("Traceparent(%q) = %s, want %s", tp, got, want)
		}
	}
	if a, b := Traceparent("", req, ev), Traceparent("", req, ev); a != b || strings.Count(a, "-") != 3 {
		t.Errorf("not stable: %s %s", a, b)
	}
}
