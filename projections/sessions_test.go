package projections

import (
	"encoding/json"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// A session says how its client reached the bridge and how many of its
// requests failed.
func TestSessionsViewTransportAndFailures(t *testing.T) {
	ids := events.NewIDSource(nil, nil)
	sid := ids.New()
	evs := []events.Event{
		{Seq: 1, Kind: events.KindMCPRequestReceived, SessionID: sid, Attrs: events.A(events.AttrClient, "c/1", "transport", "tcp")},
		{Seq: 2, Kind: events.KindMCPResponseSent, SessionID: sid, Outcome: events.OK},
		{Seq: 3, Kind: events.KindMCPRequestReceived, SessionID: sid},
		{Seq: 4, Kind: events.KindMCPResponseSent, SessionID: sid, Outcome: events.Denied, Code: events.CodePolicyDenied},
	}
	kv := &overlay{base: emptyBase{}, m: map[string][]byte{}}
	if _, err := fold(sessions{}, kv, Checkpoint{}, evs); err != nil {
		t.Fatal(err)
	}
	var s Session
	if err := json.Unmarshal(kv.Get(sid[:]), &s); err != nil {
		t.Fatal(err)
	}
	if s.Transport != "tcp" || s.Requests != 2 || s.Failures != 1 || s.Client != "c/1" {
		t.Fatalf("%+v", s)
	}
}
