package upstream

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tracebridge/tracebridge/bridge/host"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// Acceptance is the event by which an operator pins p's changed
// descriptor: the tool is admitted again from the moment it is stored. req
// is the operator request it belongs to.
func Acceptance(req events.ID, p projections.Pin, by, reason string) events.Event {
	return events.Event{Kind: events.KindUpstreamToolAccepted, RequestID: req, Outcome: events.OK, Attrs: events.AttrsOf(map[string]string{
		projections.AttrServer: p.Server, projections.AttrUpTool: p.Tool, projections.AttrExposed: p.Name,
		projections.AttrHash: p.Pending, "pinned": p.Hash, "by": by, events.AttrReason: reason})}
}

// DescriptorDiff is a unified diff of p's pinned descriptor against its
// changed one, one JSON key per line, so a changed description, schema or
// annotation reads as such.
func DescriptorDiff(p projections.Pin) string {
	return host.UnifiedDiff(p.Name, indentJSON(p.Descriptor), indentJSON(p.PendingDescriptor))
}

func indentJSON(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s + "\n"
	}
	return strings.TrimRight(b.String(), "\n") + "\n"
}
