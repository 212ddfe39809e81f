package executor

import (
	"encoding/json"
)

// annotationsOf is what t tells clients of itself (MCP tool annotations),
// as JSON: an upstream tool's as its server listed them, a built-in's
// read-only hint from its side effects (as the MCP server lists it).
func annotationsOf(t *Tool) string {
	if len(t.Listing) > 0 {
		var listed struct {
			Annotations json.RawMessage `json:"annotations"`
		}
		if json.Unmarshal(t.Listing, &listed) == nil && len(listed.Annotations) > 0 && string(listed.Annotations) != "null" {
			return string(listed.Annotations)
		}
		return "{}"
	}
	b, _ := json.Marshal(map[string]bool{"readOnlyHint": !t.SideEffects})
	return string(b)
}

// AnnotationFlags is annotations (JSON) as a rule sees them: the four MCP
// hints, each with the specification's default when unset (readOnlyHint
// false, destructiveHint true, idempotentHint false, openWorldHint true).
func AnnotationFlags(annotations string) map[string]bool {
	flags := map[string]bool{"readOnlyHint": false, "destructiveHint": true, "idempotentHint": false, "openWorldHint": true}
	var set map[string]any
	json.Unmarshal([]byte(annotations), &set)
	for k := range flags {
		if b, ok := set[k].(bool); ok {
			flags[k] = b
		}
	}
	return flags
}
