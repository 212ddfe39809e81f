package events

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// A payload is an attribute value too long to live in its event: an
// upstream's answer, a tool result, a descriptor. The emitter keeps it whole
// in the log's payload store, addressed by the SHA-256 of its (redacted)
// bytes, and puts a reference in the attribute instead:
//
//	[PAYLOAD:sha256=<64 hex>:size=<bytes>]
//
// The event's hash covers the reference, and the reference names the
// payload's hash, so the chain covers the payload. The emitter stores any
// value that merely looks like a reference as a payload too, so every
// reference in the log was made by an emitter and names a payload it stored:
// a hostile answer cannot point at another payload by spelling a reference.
const (
	// PayloadPrefix starts every reference (and every value stored as a
	// payload for looking like one).
	PayloadPrefix = "[PAYLOAD:sha256="
	refLen        = len(PayloadPrefix) + 64 + len(":size=") + 1 + 1 // shortest: size of one digit
)

// DefaultMaxPayload is the longest value kept whole when no limit is set.
// A longer one is cut (TooLarge, its size and SHA-256 recorded).
const DefaultMaxPayload = 16 << 20

// PayloadRef is the reference to payload p.
func PayloadRef(p string) string {
	sum := sha256.Sum256([]byte(p))
	return RefOf(sum, len(p))
}

// RefOf is the reference to a payload of size bytes whose SHA-256 is sum.
func RefOf(sum Hash, size int) string {
	return PayloadPrefix + hex.EncodeToString(sum[:]) + ":size=" + strconv.Itoa(size) + "]"
}

// ParseRef reports whether v is a payload reference and which payload it
// names. Anything else — a value that only starts like one — is not.
func ParseRef(v string) (sum Hash, size int, ok bool) {
	if len(v) < refLen || !strings.HasPrefix(v, PayloadPrefix) || v[len(v)-1] != ']' {
		return sum, 0, false
	}
	rest := v[len(PayloadPrefix) : len(v)-1]
	hexSum, sizeText, found := strings.Cut(rest, ":size=")
	if !found || len(hexSum) != 64 || len(sizeText) == 0 || len(sizeText) > 12 {
		return sum, 0, false
	}
	if _, err := hex.Decode(sum[:], []byte(hexSum)); err != nil || strings.ToLower(hexSum) != hexSum {
		return Hash{}, 0, false
	}
	n, err := strconv.Atoi(sizeText)
	if err != nil || n < 0 || strconv.Itoa(n) != sizeText {
		return Hash{}, 0, false
	}
	return sum, n, true
}

// looksLikeRef reports whether v starts as a reference does: such a value
// is stored as a payload even when it is short (see the package comment).
func looksLikeRef(v string) bool { return strings.HasPrefix(v, PayloadPrefix) }

// Refs returns the payloads e's attributes refer to.
func (e *Event) Refs() []Hash {
	var out []Hash
	for _, a := range e.Attrs {
		if sum, _, ok := ParseRef(a.Value); ok {
			out = append(out, sum)
		}
	}
	return out
}

// PayloadStore keeps payloads whole, addressed by their SHA-256. An
// Appender that is also a PayloadStore lets the emitter keep long values
// whole; one that is not gets them cut, as before the payload store.
type PayloadStore interface {
	// PutPayloads stores ps durably; it returns once they are. Storing a
	// payload that is stored already is a no-op.
	PutPayloads(ctx context.Context, ps []string) error
}

// PayloadReader reads payloads back by hash.
type PayloadReader interface {
	// Payload returns the payload whose SHA-256 is sum, or an error
	// wrapping ErrNoPayload.
	Payload(ctx context.Context, sum Hash) (string, error)
}

// ErrNoPayload is wrapped by reads of a payload the store does not hold.
var ErrNoPayload = fmt.Errorf("payload not stored")

// TooLarge is what a value over the payload limit becomes: its first bytes,
// its size and SHA-256, and the limit it passed, so the cut is on record
// and never silent.
func TooLarge(v string, limit int) string {
	sum := sha256.Sum256([]byte(v))
	return fmt.Sprintf("%s…[%s:size=%d:sha256=%x:limit=%d]", keptPrefix(v), CodeTooLarge, len(v), sum, limit)
}

// ResolveValue returns v, or the payload v refers to, read from r.
func ResolveValue(ctx context.Context, r PayloadReader, v string) (string, error) {
	sum, _, ok := ParseRef(v)
	if !ok {
		return v, nil
	}
	return r.Payload(ctx, sum)
}

// Resolve returns e with every payload reference in its attributes replaced
// by the payload, read from r: the event as its emitter saw it (redacted).
// e itself is not changed.
func Resolve(ctx context.Context, r PayloadReader, e Event) (Event, error) {
	var out Attrs
	for i, a := range e.Attrs {
		if _, _, ok := ParseRef(a.Value); !ok {
			continue
		}
		p, err := ResolveValue(ctx, r, a.Value)
		if err != nil {
			return e, fmt.Errorf("event %s attribute %s: %w", e.ID, a.Key, err)
		}
		if out == nil {
			out = e.Attrs.Clone()
		}
		out[i].Value = p
	}
	if out != nil {
		e.Attrs = out
	}
	return e, nil
}
