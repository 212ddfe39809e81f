package export

import (
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// F-C2: in cluster mode the ECS line of a decision names the member that
// published it (user.name), not the name it claims (kept as
// labels.claimed_by). The twin: a local decision names its "by".
func TestECSDeciderIsTheAuthenticatedMember(t *testing.T) {
	line := func(attrs map[string]string) map[string]any {
		t.Helper()
		doc, err := ECS(AuditLine{Kind: events.KindApprovalDecided, Outcome: events.OK, EventID: events.NewID(), Attrs: attrs})
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	get := func(doc map[string]any, path ...string) any {
		var v any = doc
		for _, p := range path {
			m, _ := v.(map[string]any)
			v = m[p]
		}
		return v
	}
	forged := line(map[string]string{events.AttrBy: "alice", events.AttrOriginUser: "bob", events.AttrDecision: events.Approve})
	if get(forged, "user", "name") != "bob" || get(forged, "labels", "claimed_by") != "alice" {
		t.Fatalf("a decision bob published claiming alice: user %v, labels %v", get(forged, "user"), get(forged, "labels"))
	}
	local := line(map[string]string{events.AttrBy: "uid 1000 (alice)", events.AttrDecision: events.Approve})
	if get(local, "user", "name") != "uid 1000 (alice)" {
		t.Fatalf("a local decision: user %v", get(local, "user"))
	}
}
