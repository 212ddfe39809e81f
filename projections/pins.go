package projections

import (
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Pin is what the log says of one upstream tool's descriptor: the hash an
// operator accepted (first sight pins it), and a changed descriptor that
// waits for acceptance. Its key is "server/tool" (the upstream's own name).
type Pin struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Name is the tool's name in the bridge's catalog (server__tool).
	Name       string `json:"name"`
	Hash       string `json:"hash"`
	Descriptor string `json:"descriptor"`
	// Pending is the hash of a changed descriptor not yet accepted.
	Pending           string `json:"pending,omitempty"`
	PendingDescriptor string `json:"pendingDescriptor,omitempty"`
	State             string `json:"state"` // pinned | changed | flagged | removed
	// Findings are why the guard held the tool or its change (JSON, the
	// guard's findings: rule, action, why, trigger).
	Findings   string    `json:"findings,omitempty"`
	Pinned     time.Time `json:"pinned"`
	Changed    time.Time `json:"changed,omitzero"`
	AcceptedBy string    `json:"acceptedBy,omitempty"`
}

// Pin states.
const (
	PinPinned  = "pinned"
	PinChanged = "changed"
	PinRemoved = "removed"
	// PinFlagged is a tool the guard held on first sight: nothing is
	// pinned until an operator accepts its descriptor (Pending).
	PinFlagged = "flagged"
)

// AttrFindings is the guard's findings on a descriptor (JSON).
const AttrFindings = "findings"

// Attributes of the upstream.tool.* events (and events.AttrServer).
const (
	AttrUpTool     = "upstreamTool"
	AttrExposed    = "exposed" // the name in the bridge's catalog (server__tool)
	AttrHash       = "hash"
	AttrDescriptor = "descriptor"
)

// IdentityTool is the pins view's tool name for a server's own identity
// (its origin, executable, TLS key and serverInfo): no MCP tool is called
// so ("@" is not in a tool name's alphabet). It is shown and accepted as
// IdentityName(server).
const IdentityTool = "@server"

// AttrLearned, on upstream.tool.pinned of an identity, names the pinned
// hash whose unknown fields (a TLS key, a serverInfo not seen before an
// accepted change) the new hash fills in.
const AttrLearned = "learned"

// IdentityName is how tools list, diff and accept name server's identity.
func IdentityName(server string) string { return "server:" + server }

// PinKey is the key of server's tool in the pins view.
func PinKey(server, tool string) string { return server + "/" + tool }

type pins struct{}

func (pins) Name() string { return ViewPins }
func (pins) Version() int { return 3 }

func (pins) Apply(kv KV, e *events.Event) error {
	server, tool, hash := e.Attrs.Get(events.AttrServer), e.Attrs.Get(AttrUpTool), e.Attrs.Get(AttrHash)
	if server == "" || tool == "" || hash == "" {
		return nil
	}
	key := []byte(PinKey(server, tool))
	p, found, err := loadState[Pin](kv, key)
	if err != nil {
		return err
	}
	switch e.Kind {
	case events.KindUpstreamToolPinned:
		switch {
		case !found:
			*p = Pin{Server: server, Tool: tool, Name: e.Attrs.Get(AttrExposed), Hash: hash, Descriptor: e.Attrs.Get(AttrDescriptor), Pinned: e.Time}
		case p.Hash != hash && e.Attrs.Get(AttrLearned) != p.Hash:
			return nil // pinned already with another descriptor: the first stands
		case p.Hash != hash: // an identity accepted with fields unknown then, learned now
			p.Hash, p.Descriptor = hash, e.Attrs.Get(AttrDescriptor)
		}
		p.State = PinPinned
		if p.Pending != "" {
			p.State = PinChanged
		}
	case events.KindUpstreamToolFlagged:
		if found {
			return nil // held on first sight only; a change of a pinned tool is a change
		}
		*p = Pin{Server: server, Tool: tool, Name: e.Attrs.Get(AttrExposed), Pending: hash, PendingDescriptor: e.Attrs.Get(AttrDescriptor),
			State: PinFlagged, Changed: e.Time, Findings: e.Attrs.Get(AttrFindings)}
	case events.KindUpstreamToolChanged:
		if !found || hash == p.Hash {
			return nil
		}
		p.Pending, p.PendingDescriptor, p.State, p.Changed = hash, e.Attrs.Get(AttrDescriptor), PinChanged, e.Time
		p.Findings = e.Attrs.Get(AttrFindings)
	case events.KindUpstreamToolAccepted:
		if !found || hash != p.Pending {
			return nil // accepts a descriptor that no longer waits
		}
		p.Hash, p.Descriptor, p.Pending, p.PendingDescriptor, p.State, p.AcceptedBy = p.Pending, p.PendingDescriptor, "", "", PinPinned, e.Attrs.Get(events.AttrBy)
		if p.Pinned.IsZero() {
			p.Pinned = e.Time
		}
	case events.KindUpstreamToolRemoved:
		if !found {
			return nil
		}
		p.State = PinRemoved
	default:
		return nil
	}
	return saveState(kv, key, p)
}

func (pins) Present(_, v []byte, q Query) (json.RawMessage, bool, error) {
	if q.Status == "" && q.Tool == "" {
		return copyJSON(v), true, nil
	}
	var p Pin
	if err := json.Unmarshal(v, &p); err != nil {
		return nil, false, err
	}
	return copyJSON(v), (q.Status == "" || p.State == q.Status) && (q.Tool == "" || p.Name == q.Tool || p.Tool == q.Tool), nil
}

func (pins) Key(s string) ([]byte, error) { return []byte(s), nil }

// AnnotationFlags is MCP tool annotations (JSON) read as the MCP
// specification defines them: the four hints, each with its default when
// unset (readOnlyHint false, destructiveHint true, idempotentHint false,
// openWorldHint true). The rules see them so; AnnotationHints says them.
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

// AnnotationHints is what MCP tool annotations (JSON) say (AnnotationFlags):
// "read-only", or else "destructive" and "idempotent" as they hold; and
// "open world". None when annotations is not a JSON object (not recorded).
func AnnotationHints(annotations string) []string {
	var set map[string]any
	if json.Unmarshal([]byte(annotations), &set) != nil || set == nil {
		return nil
	}
	f := AnnotationFlags(annotations)
	var out []string
	if f["readOnlyHint"] {
		out = append(out, "read-only")
	} else {
		if f["destructiveHint"] {
			out = append(out, "destructive")
		}
		if f["idempotentHint"] {
			out = append(out, "idempotent")
		}
	}
	if f["openWorldHint"] {
		out = append(out, "open world")
	}
	return out
}

// Annotations is the pinned descriptor's MCP annotations (JSON): "{}" when
// it has none, "" when the descriptor kept is not whole JSON.
func (p Pin) Annotations() string {
	d, ok := p.described()
	if !ok {
		return ""
	}
	if len(d.Annotations) == 0 || string(d.Annotations) == "null" {
		return "{}"
	}
	return string(d.Annotations)
}

// InputSchema is the pinned descriptor's input schema (nil when the
// descriptor kept is not whole JSON).
func (p Pin) InputSchema() json.RawMessage {
	d, _ := p.described()
	return d.InputSchema
}

// described is the parts of the pinned descriptor its readers use.
func (p Pin) described() (d struct {
	Annotations json.RawMessage `json:"annotations"`
	InputSchema json.RawMessage `json:"inputSchema"`
}, ok bool) {
	return d, json.Unmarshal([]byte(p.Descriptor), &d) == nil
}
