package projections

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tracebridge/tracebridge/internal/textdiff"

	"github.com/tracebridge/tracebridge/events"
)

// Acceptance is the event by which an operator pins p's changed
// descriptor: the tool is admitted again from the moment it is stored. req
// is the operator request it belongs to.
func Acceptance(req events.ID, p Pin, by, reason string) events.Event {
	return events.Event{Kind: events.KindUpstreamToolAccepted, RequestID: req, Outcome: events.OK, Attrs: events.A(events.AttrServer, p.Server, AttrUpTool, p.Tool, AttrExposed, p.Name, AttrHash, p.Pending, "pinned", p.Hash, "by", by, events.AttrReason, reason)}
}

// DescriptorDiff is a unified diff of p's pinned descriptor against its
// changed one, one JSON key per line, so a changed description, schema or
// annotation reads as such; long texts (a description) are split at their
// line breaks. Both are read whole from dir (the descriptors kept by hash)
// when the recorded ones were cut; whole says whether both are whole.
func DescriptorDiff(p Pin, dir string) (diff string, whole bool) {
	old, okOld := WholeDescriptor(dir, p.Hash, p.Descriptor)
	if p.Hash == "" { // held on first sight: nothing was pinned before
		old, okOld = "", true
	}
	next, okNew := WholeDescriptor(dir, p.Pending, p.PendingDescriptor)
	return textdiff.Unified(p.Name, indentLines(old), indentLines(next)), okOld && okNew
}

// indentLines is s indented, one key per line; a string value with line
// breaks (a long description) continues on lines of its own, each marked
// "|", so a line added in the middle of it reads as one added line.
func indentLines(s string) string {
	var b bytes.Buffer
	if json.Indent(&b, []byte(s), "", "  ") != nil {
		return s + "\n"
	}
	var out strings.Builder
	for _, line := range strings.Split(strings.TrimRight(b.String(), "\n"), "\n") {
		out.WriteString(strings.ReplaceAll(line, `\n`, "\n  | ") + "\n")
	}
	return out.String()
}
