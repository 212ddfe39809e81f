package executor

import (
	"encoding/json"
	"strings"

	"github.com/tracebridge/tracebridge/policy"
)

// Server is the upstream server the tool belongs to ("" for the bridge's
// own tools): its source names it, upstream:NAME.
func (d *Descriptor) Server() string {
	server, _ := strings.CutPrefix(d.Source, "upstream:")
	if server == d.Source {
		return ""
	}
	return server
}

// Qualified is an upstream tool's policy name, server__tool, whatever name
// it is listed under ("" for the bridge's own tools).
func (d *Descriptor) Qualified() string {
	return policy.Qualified(d.Server(), d.Name)
}

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
