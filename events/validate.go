package events

import (
	"fmt"
	"slices"
	"strings"
)

// Limits of one event, checked by Validate.
const (
	MaxAttrs     = 64
	MaxKeyLen    = 128
	maxFieldLen  = 256 // kind, boundary, participants, outcome, code
	maxParentLen = 55  // a W3C traceparent is 55 characters
)

// Validate reports why e cannot be appended: it must have an id and a time,
// a catalogued kind whose boundary it repeats, and stay within the limits.
func Validate(e *Event) error {
	if e.ID.IsZero() {
		return fmt.Errorf("event has no id")
	}
	if e.Time.IsZero() {
		return fmt.Errorf("event %s has no time", e.ID)
	}
	info, ok := Lookup(e.Kind)
	if !ok {
		return fmt.Errorf("event %s: unknown kind %q", e.ID, e.Kind)
	}
	if e.Boundary != info.Boundary {
		return fmt.Errorf("event %s: kind %s belongs to boundary %q, not %q", e.ID, e.Kind, info.Boundary, e.Boundary)
	}
	for _, f := range [...]struct{ name, s string }{{"from", e.From}, {"to", e.To}, {"outcome", string(e.Outcome)}, {"code", string(e.Code)}} {
		if len(f.s) > maxFieldLen {
			return fmt.Errorf("event %s: %s is %d bytes (cap %d)", e.ID, f.name, len(f.s), maxFieldLen)
		}
	}
	if len(e.Traceparent) > maxParentLen {
		return fmt.Errorf("event %s: traceparent is %d bytes (cap %d)", e.ID, len(e.Traceparent), maxParentLen)
	}
	if len(e.Attrs) > MaxAttrs {
		return fmt.Errorf("event %s: %d attributes (cap %d)", e.ID, len(e.Attrs), MaxAttrs)
	}
	if !e.Attrs.sorted() {
		c := e.Attrs.Clone()
		slices.SortStableFunc(c, func(x, y Attr) int { return strings.Compare(x.Key, y.Key) })
		for i := 1; i < len(c); i++ {
			if c[i-1].Key == c[i].Key {
				return fmt.Errorf("event %s: attribute %q given twice", e.ID, c[i].Key)
			}
		}
	}
	for k, v := range e.Attrs.All() {
		if k == "" || len(k) > MaxKeyLen {
			return fmt.Errorf("event %s: attribute key of %d bytes (1 to %d)", e.ID, len(k), MaxKeyLen)
		}
		if len(v) > MaxAttrLen+TruncatedPrefix+128 {
			return fmt.Errorf("event %s: attribute %q is %d bytes; the emitter truncates values over %d", e.ID, k, len(v), MaxAttrLen)
		}
	}
	return nil
}
