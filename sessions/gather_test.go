package sessions

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// Gather reads a session's runs in the order they began, its
// notifications, the operator run that decided its proposal (and no other
// operator run), with payloads whole in place of their references.
func TestGatherReadsTheSessionWhole(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Name: "gather-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node})
	sid, other := events.NewID(), events.NewID()
	long := strings.Repeat("whole answer ", events.MaxAttrLen/4)
	run := func(session events.ID, attrs map[string]string) events.ID {
		req := events.NewID()
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, SessionID: session, Outcome: events.OK, Attrs: events.AttrsOf(attrs)})
		em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, SessionID: session, Outcome: events.OK})
		return req
	}
	decide := func(proposal string) events.ID {
		req := events.NewID()
		em.Emit(events.Event{Kind: events.KindPipeRequestSent, RequestID: req, Outcome: events.OK,
			Attrs: events.A("command", "proposals.decide", "payload", `{"id":"`+proposal+`"}`)})
		return req
	}
	first := run(sid, map[string]string{"answer": long})
	decide("P-unrelated")
	em.Emit(events.Event{Kind: events.KindMCPNotificationReceived, SessionID: sid, Outcome: events.OK})
	second := run(sid, map[string]string{"proposal": "P1"})
	run(other, nil)
	decided := decide("P1")
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	in, err := Gather(ctx, node, sid)
	if err != nil {
		t.Fatal(err)
	}
	var got []events.ID
	for _, r := range in.Runs {
		got = append(got, r[0].RequestID)
	}
	if len(got) != 3 || got[0] != first || got[1] != second || got[2] != decided {
		t.Fatalf("runs %v, want the session's two then the deciding operator run %v", got, []events.ID{first, second, decided})
	}
	if len(in.Notifications) != 1 {
		t.Fatalf("%d notifications, want 1", len(in.Notifications))
	}
	if a := in.Runs[0][0].Attrs.Get("answer"); a != long {
		t.Fatalf("the long attribute came back %d bytes (%.40q), want %d whole", len(a), a, len(long))
	}
	if _, err := Gather(ctx, node, events.NewID()); err == nil || !strings.Contains(err.Error(), "no events of session") {
		t.Fatalf("an unknown session: %v", err)
	}
}
