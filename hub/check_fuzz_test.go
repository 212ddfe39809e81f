package hub

import (
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A hostile publisher controls a stream message's bytes and, within its
// permissions, its subject: check never panics, and what it accepts is a
// valid event whose origin is the subject's.
func FuzzCheck(f *testing.F) {
	e := events.Event{ID: events.NewID(), Time: time.Unix(1700000000, 0).UTC(), Kind: events.KindToolCompleted,
		Boundary: events.BoundaryTool, Outcome: events.OK,
		Attrs: events.A(events.AttrOriginUser, "alice", events.AttrOriginMachine, "m1")}
	f.Add("tb.log.alice.m1", events.Encode(&e))
	f.Add("tb.log.bob.m1", events.Encode(&e))
	f.Add("tb.log.alice", events.Encode(&e))
	f.Add("tb.log.alice.m1", []byte{1, 0})
	f.Fuzz(func(t *testing.T, subject string, data []byte) {
		got, code, err := check(subject, data)
		if err != nil {
			if code != events.CodeMalformedAppend && code != events.CodeOriginMismatch {
				t.Fatalf("refused with code %q", code)
			}
			return
		}
		if verr := events.Validate(&got); verr != nil {
			t.Fatalf("accepted an invalid event: %v", verr)
		}
		if want := "tb.log." + got.Attrs.Get(events.AttrOriginUser) + "." + got.Attrs.Get(events.AttrOriginMachine); subject != want || strings.Count(subject, ".") != 3 {
			t.Fatalf("accepted origin %q on subject %q", want, subject)
		}
	})
}
