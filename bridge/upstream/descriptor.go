package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/projections"
)

// describe returns the canonical JSON of what a tool's pin covers — every
// field clients are shown: its name, title, description, input and output
// schemas, annotations, and its icons and _meta when it has them (absent
// ones are left out, so pins made before they were covered still hold) —
// and its SHA-256. Canonical: keys sorted at every level (encoding/json
// sorts map keys), no insignificant space, so the same descriptor always
// hashes the same whatever order the upstream wrote it in.
func describe(t *sdk.Tool) (desc, hash string) {
	d := map[string]any{"name": t.Name, "title": t.Title, "description": t.Description,
		"inputSchema": canonical(t.InputSchema), "outputSchema": canonical(t.OutputSchema), "annotations": canonical(t.Annotations)}
	if len(t.Icons) > 0 {
		d["icons"] = canonical(t.Icons)
	}
	if len(t.Meta) > 0 {
		d["_meta"] = canonical(t.Meta)
	}
	b, _ := json.Marshal(d)
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:])
}

// canonical turns v into generic JSON values (maps sort their keys when
// marshalled).
func canonical(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil
	}
	return out
}

// pinnedTool is the tool p pins, read back from its canonical descriptor
// (kept whole in dir, or as recorded); false when that descriptor is not
// whole or does not hash to the pin.
func pinnedTool(p projections.Pin, dir string) (*sdk.Tool, bool) {
	desc, ok := projections.WholeDescriptor(dir, p.Hash, p.Descriptor)
	var t sdk.Tool
	if !ok || json.Unmarshal([]byte(desc), &t) != nil {
		return nil, false
	}
	if _, hash := describe(&t); hash != p.Hash {
		return nil, false
	}
	return &t, true
}
