package mcp

import (
	"encoding/json"
	"testing"

	"github.com/tracebridge/tracebridge/bridge/executor"
)

// An upstream tool is shown as its pinned descriptor says, only renamed:
// title, output schema, icons, _meta and every annotation (idempotentHint came out false
// when the listing was rebuilt from the executor's descriptor).
func TestListedKeepsTheUpstreamDescriptor(t *testing.T) {
	desc := `{"annotations":{"destructiveHint":false,"idempotentHint":true,"openWorldHint":true,"readOnlyHint":false,"title":"Make"},` +
		`"description":"makes things","inputSchema":{"type":"object"},"name":"make",` +
		`"outputSchema":{"properties":{"id":{"type":"string"}},"type":"object"},"title":"Make a thing",` +
		`"icons":[{"src":"https://example.com/make.png","mimeType":"image/png"}],"_meta":{"example.com/ui":"make"}}`
	got := listed(&executor.Tool{Descriptor: executor.Descriptor{ID: "srv__make", Description: "ignored"}, Listing: json.RawMessage(desc)},
		json.RawMessage(`{"type":"object"}`))
	b, _ := json.Marshal(got)
	var m map[string]any
	json.Unmarshal(b, &m)
	if m["name"] != "srv__make" || m["title"] != "Make a thing" || m["description"] != "makes things" {
		t.Errorf("name, title, description: %s", b)
	}
	ann, _ := m["annotations"].(map[string]any)
	if ann["idempotentHint"] != true || ann["openWorldHint"] != true || ann["destructiveHint"] != false || ann["title"] != "Make" {
		t.Errorf("annotations: %s", b)
	}
	if os, _ := m["outputSchema"].(map[string]any); os == nil || os["type"] != "object" {
		t.Errorf("outputSchema: %s", b)
	}
	if icons, _ := m["icons"].([]any); len(icons) != 1 {
		t.Errorf("icons: %s", b)
	}
	if meta, _ := m["_meta"].(map[string]any); meta["example.com/ui"] != "make" {
		t.Errorf("_meta: %s", b)
	}
	// A built-in tool (no listing) is built from its descriptor.
	got = listed(&executor.Tool{Descriptor: executor.Descriptor{ID: "echo", Description: "d", SideEffects: false}}, nil)
	if got.Name != "echo" || got.Annotations == nil || !got.Annotations.ReadOnlyHint {
		t.Errorf("built-in: %+v", got)
	}
}
