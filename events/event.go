package events

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
)

// ID identifies events, requests, operations and sessions. It is a ULID:
// 16 bytes, sortable by creation time, printed as 26 Crockford base32 chars.
type ID = ulid.ULID

// ParseID parses the 26-character text form of an ID.
func ParseID(s string) (ID, error) {
	id, err := ulid.ParseStrict(s)
	if err != nil {
		return ID{}, fmt.Errorf("parse id %q: %w", s, err)
	}
	return id, nil
}

// Hash is a SHA-256 chain hash. The zero Hash is the "previous hash" of the
// first event in a log.
type Hash [32]byte

// IsZero reports whether h is the zero hash.
func (h Hash) IsZero() bool { return h == Hash{} }

func (h Hash) String() string { return hex.EncodeToString(h[:]) }

// MarshalText encodes h as lowercase hex.
func (h Hash) MarshalText() ([]byte, error) { return []byte(h.String()), nil }

// UnmarshalText decodes a lowercase or uppercase hex hash.
func (h *Hash) UnmarshalText(b []byte) error {
	if len(b) != 64 {
		return fmt.Errorf("hash: want 64 hex characters, got %d", len(b))
	}
	_, err := hex.Decode(h[:], b)
	return err
}

// Event is one boundary crossing. The emitter sets ID and Time; the store sets
// Seq, Prev and Hash. Everything else is the producer's.
type Event struct {
	ID          ID        `json:"id"`
	Seq         uint64    `json:"seq,omitempty"`
	Time        time.Time `json:"time"`
	Kind        string    `json:"kind"`
	Boundary    Boundary  `json:"boundary"`
	From        string    `json:"from,omitempty"`
	To          string    `json:"to,omitempty"`
	RequestID   ID        `json:"requestId,omitzero"`
	OperationID ID        `json:"operationId,omitzero"`
	SessionID   ID        `json:"sessionId,omitzero"`
	ParentID    ID        `json:"parentId,omitzero"`
	Traceparent string    `json:"traceparent,omitempty"`
	Outcome     Outcome   `json:"outcome,omitempty"`
	Code        Code      `json:"code,omitempty"`
	DurationMs  float64   `json:"durationMs,omitempty"`
	Attrs       Attrs     `json:"attrs,omitempty"`
	Prev        Hash      `json:"prev,omitzero"`
	Hash        Hash      `json:"hash,omitzero"`
}

// Outcome is how a step ended.
type Outcome string

const (
	OK          Outcome = "ok"
	Error       Outcome = "error"
	Denied      Outcome = "denied"
	Timeout     Outcome = "timeout"
	Unavailable Outcome = "unavailable"
	Cancelled   Outcome = "cancelled"
	Pending     Outcome = "pending"
)

// Failed reports whether the outcome means the step did not succeed.
func (o Outcome) Failed() bool {
	switch o {
	case Error, Denied, Timeout, Unavailable, Cancelled:
		return true
	}
	return false
}

// Ms is d in milliseconds with microsecond precision: how events record a
// duration.
func Ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// Took is e ending a step that began at since, now: with its duration
// (none for a zero since: a point event).
func (e Event) Took(since, now time.Time) Event {
	if !since.IsZero() {
		e.DurationMs = Ms(now.Sub(since))
	}
	return e
}
