package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A hostile publisher controls a stream message's bytes and headers and,
// within its permissions, its subject: checkMessage never panics, and what
// it accepts are valid events whose origin is the subject's (one event of
// another origin refuses the whole batch).
func FuzzCheck(f *testing.F) {
	e := events.Event{ID: events.NewID(), Time: time.Unix(1700000000, 0).UTC(), Kind: events.KindToolCompleted,
		Boundary: events.BoundaryTool, Outcome: events.OK,
		Attrs: events.A(events.AttrOriginUser, "alice", events.AttrOriginMachine, "m1")}
	other := e
	other.ID, other.Attrs = events.NewID(), events.A(events.AttrOriginUser, "bob", events.AttrOriginMachine, "m1")
	f.Add("tb.log.alice.m1", false, events.Encode(&e))
	f.Add("tb.log.bob.m1", false, events.Encode(&e))
	f.Add("tb.log.alice", false, events.Encode(&e))
	f.Add("tb.log.alice.m1", false, []byte{1, 0})
	f.Add("tb.log.alice.m1", true, events.EncodeRecords([][]byte{events.Encode(&e), events.Encode(&e)}))
	f.Add("tb.log.alice.m1", true, events.EncodeRecords([][]byte{events.Encode(&e), events.Encode(&other)}))
	f.Add("tb.log.alice.m1", true, events.Encode(&e))
	f.Fuzz(func(t *testing.T, subject string, batch bool, data []byte) {
		got, code, err := checkMessage(subject, batch, data)
		if err != nil {
			if code != events.CodeMalformedAppend && code != events.CodeOriginMismatch {
				t.Fatalf("refused with code %q", code)
			}
			return
		}
		if len(got) == 0 && !batch {
			t.Fatal("a single-event message accepted without its event")
		}
		for _, e := range got {
			if verr := events.Validate(&e); verr != nil {
				t.Fatalf("accepted an invalid event: %v", verr)
			}
			if want := "tb.log." + e.Attrs.Get(events.AttrOriginUser) + "." + e.Attrs.Get(events.AttrOriginMachine); subject != want || strings.Count(subject, ".") != 3 {
				t.Fatalf("accepted origin %q on subject %q", want, subject)
			}
		}
	})
}
