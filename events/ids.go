package events

import (
	"crypto/rand"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
)

// IDSource makes ULIDs that are unique and never go backwards within one
// process: the clock is read under the same lock as the monotonic entropy,
// so two goroutines cannot interleave a clock read and an increment. (A bare
// ulid.Make reads the clock outside its lock and can go backwards.)
type IDSource struct {
	mu      sync.Mutex
	now     func() time.Time
	entropy *ulid.MonotonicEntropy
	last    ID
}

// NewIDSource returns a source reading now (time.Now when nil) and entropy
// (crypto/rand when nil). Tests and recorded sessions pass a fixed clock and a
// seeded reader to get the same ids every run.
func NewIDSource(now func() time.Time, entropy io.Reader) *IDSource {
	if now == nil {
		now = time.Now
	}
	if entropy == nil {
		entropy = rand.Reader
	}
	return &IDSource{now: now, entropy: ulid.Monotonic(entropy, 0)}
}

// New returns the next id.
func (s *IDSource) New() ID {
	s.mu.Lock()
	defer s.mu.Unlock()
	ms := ulid.Timestamp(s.now())
	if ms < s.last.Time() {
		// The wall clock stepped back: stay in the last millisecond so ids
		// keep increasing.
		ms = s.last.Time()
	}
	id, err := ulid.New(ms, s.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond
		// (2^80 ids); move to the next millisecond.
		id = ulid.MustNew(ms+1, s.entropy)
	}
	s.last = id
	return id
}

var defaultIDs = NewIDSource(nil, nil)

// NewID returns a process-wide unique, increasing id.
func NewID() ID { return defaultIDs.New() }
