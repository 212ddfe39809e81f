package events_test

import (
	"context"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// Tags add their attributes to every event of their session or request,
// an event's own attribute of the same key wins, and after Untag nothing
// is added.
func TestTagsNameEveryEventOfTheirSessionAndRequest(t *testing.T) {
	st := openStore(t)
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet})
	defer em.Close(context.Background())
	sess, req := em.NewID(), em.NewID()
	em.Tag(sess, "user.sub", "u-alice", "user.name", "alice")
	em.Tag(req, "user.client_id", "c")
	em.Emit(events.Event{Kind: events.KindMCPSessionStarted, SessionID: sess, Outcome: events.OK})
	em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, SessionID: sess, Outcome: events.OK, Attrs: events.A("user.name", "own", "tool", "t")})
	em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK})
	em.Untag(req)
	em.Untag(sess)
	em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, SessionID: sess, Outcome: events.OK})
	if err := em.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	got, err := st.ByRequest(req)
	if err != nil || len(got) != 3 {
		t.Fatalf("%d events (%v)", len(got), err)
	}
	want := []string{
		`[{tool t} {user.client_id c} {user.name own} {user.sub u-alice}]`,
		`[{user.client_id c}]`,
		`[]`,
	}
	for i, e := range got {
		if s := fmtAttrs(e.Attrs); s != want[i] {
			t.Errorf("event %d: %s, want %s", i, s, want[i])
		}
	}
}

func fmtAttrs(a events.Attrs) string {
	out := "["
	for i, x := range a {
		if i > 0 {
			out += " "
		}
		out += "{" + x.Key + " " + x.Value + "}"
	}
	return out + "]"
}
