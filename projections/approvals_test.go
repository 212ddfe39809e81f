package projections

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// An approval is pending once asked; the first decision stands; a decision
// nobody asked for (allow or deny mode) leaves no entry.
func TestApprovalsView(t *testing.T) {
	ids := events.NewIDSource(nil, nil)
	req, asked, unasked := ids.New(), ids.New().String(), ids.New().String()
	deadline := time.Date(2026, 1, 1, 0, 2, 0, 0, time.UTC)
	evs := []events.Event{
		{Seq: 1, Kind: events.KindApprovalRequested, RequestID: req, Outcome: events.Pending, Attrs: events.A(events.AttrApprovalID, asked, events.AttrTool, "t", events.AttrArgsHash, "h", events.AttrDeadline, deadline.Format(time.RFC3339Nano))},
		{Seq: 2, Kind: events.KindApprovalDecided, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrApprovalID, unasked, events.AttrDecision, "approve", "by", "config")},
	}
	kv := &overlay{base: emptyBase{}, m: map[string][]byte{}}
	if _, err := fold(approvals{}, kv, Checkpoint{}, evs); err != nil {
		t.Fatal(err)
	}
	get := func(id string) (Approval, bool) {
		k, _ := idKey(id)
		var a Approval
		v := kv.Get(k)
		if v == nil {
			return a, false
		}
		json.Unmarshal(v, &a)
		return a, true
	}
	if a, ok := get(asked); !ok || a.State != ApprovalPending || !a.Deadline.Equal(deadline) || a.Tool != "t" {
		t.Fatalf("asked: %+v %v", a, ok)
	}
	if _, ok := get(unasked); ok {
		t.Fatal("a decision nobody asked for made an entry")
	}
	more := []events.Event{
		{Seq: 3, Kind: events.KindApprovalDecided, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrApprovalID, asked, events.AttrDecision, "deny", "by", "alice", events.AttrReason, "no")},
		{Seq: 4, Kind: events.KindApprovalDecided, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrApprovalID, asked, events.AttrDecision, "approve", "by", "mallory")},
	}
	if _, err := fold(approvals{}, kv, Checkpoint{Seq: 2}, more); err != nil {
		t.Fatal(err)
	}
	if a, _ := get(asked); a.State != ApprovalDecided || a.Decision != "deny" || a.By != "alice" {
		t.Fatalf("decided: %+v", a)
	}
}

// An approval shows what the tool's annotations say, with the MCP
// specification's defaults for what they leave out.
func TestApprovalHints(t *testing.T) {
	for annotations, want := range map[string]string{
		"":                       "",
		"{}":                     "destructive, open world",
		`{"readOnlyHint":true}`:  "read-only, open world",
		`{"readOnlyHint":false}`: "destructive, open world",
		`{"destructiveHint":false,"idempotentHint":true,"openWorldHint":false}`: "idempotent",
		`{"readOnlyHint":true,"openWorldHint":false}`:                           "read-only",
		`not json`: "",
	} {
		if got := strings.Join(Approval{Annotations: annotations}.Hints(), ", "); got != want {
			t.Errorf("%s: %q, want %q", annotations, got, want)
		}
	}
}
