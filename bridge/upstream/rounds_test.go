package upstream

import (
	"fmt"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// A retry names the call's first request and its round, by the server's
// state or, without one, by client, tool and arguments; the book forgets
// the oldest calls past maxRounds.
func TestRoundsNameTheirCall(t *testing.T) {
	var b roundBook
	first, second, third := events.NewID(), events.NewID(), events.NewID()
	b.asked(roundKey("s1", "c", "t", []byte("{}")), first, 1)
	if f, n := b.retry(roundKey("s1", "other", "x", nil), second); f != first || n != 2 {
		t.Errorf("by state: %v %d", f, n)
	}
	b.asked(roundKey("", "c", "t", []byte(`{"a":1}`)), second, 2)
	if f, n := b.retry(roundKey("", "c", "t", []byte(`{"a":1}`)), third); f != second || n != 3 {
		t.Errorf("by call: %v %d", f, n)
	}
	// Its harmless twins: another client's, another argument's call is a
	// call of its own.
	for _, k := range [][32]byte{roundKey("", "d", "t", []byte(`{"a":1}`)), roundKey("", "c", "t", []byte(`{"a":2}`))} {
		if f, n := b.retry(k, third); f != third || n != 1 {
			t.Errorf("an unrelated retry joined a call: %v %d", f, n)
		}
	}
	for i := range maxRounds {
		b.asked(roundKey(fmt.Sprint(i), "", "", nil), third, 1)
	}
	if f, n := b.retry(roundKey("s1", "", "", nil), third); f != third || n != 1 || len(b.by) != maxRounds {
		t.Errorf("the oldest state was not forgotten: %v %d (%d kept)", f, n, len(b.by))
	}
}
