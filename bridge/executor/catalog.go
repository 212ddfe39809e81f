package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/events"
)

// Descriptor says what a tool is and what it needs. It is snapshotted into
// every audit envelope.
type Descriptor struct {
	ID          string `json:"id"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category"`
	// Source is "builtin" or the manifest a discovered tool came from.
	Source string `json:"source"`
	// Host is "" for tools run in the bridge, "workspace" for tools the
	// workspace host runs over the pipe.
	Host         string   `json:"host,omitempty"`
	Capabilities []string `json:"capabilities"`
	// SideEffects marks tools that change something outside the bridge: they
	// never run unless their intent is durable in the log.
	SideEffects bool `json:"sideEffects"`
	// Approval is "always" or "never" (tracebridge.toml can override it).
	Approval string `json:"approval"`
	// Pin is the descriptor hash an upstream tool is admitted under: an
	// approval names it (the call is refused ToolChanged if it changes).
	Pin     string   `json:"pin,omitempty"`
	Secrets []string `json:"secrets,omitempty"`
	// Timeout bounds one run when [tools.<id>] timeout is not set. Zero:
	// 30s.
	Timeout time.Duration `json:"-"`
	// Recorded tools keep their result on tool.completed (redacted), so a
	// session re-drive can answer for a tool it must not run (a
	// discovered tool is a process).
	Recorded bool `json:"recorded,omitempty"`
}

// Call is what a tool's Run receives.
type Call struct {
	RequestID, OperationID, SessionID events.ID
	Args                              json.RawMessage
	// Secrets holds the resolved values of the descriptor's secret
	// references, by name. They are registered with the redactor first.
	Secrets map[string]string
	// Traceparent is the client's W3C trace context, if it sent one.
	Traceparent string
	// Progress reports progress to the client; nil when the client asked
	// for none.
	Progress func(progress, total float64, message string)
	// Round is the client's answers to its server's input requests, when
	// the call is a retry (tools that ask for none never see one).
	Round InputRound
}

// RunFunc runs a tool. Its result is returned to the client as structured
// content; an error becomes a ToolError result.
type RunFunc func(ctx context.Context, call Call) (any, error)

// Tool is a catalog entry.
type Tool struct {
	Descriptor
	// InputSchema describes the arguments; it must be an object schema.
	InputSchema *jsonschema.Schema
	// RawSchema, when set, is the schema shown to clients instead of
	// InputSchema (an upstream's own, byte for byte); InputSchema then
	// validates what the executor can check of it.
	RawSchema json.RawMessage
	// Listing, when set, is the tool as clients are shown it: the JSON of
	// an MCP tool (title, schemas, annotations as its source sent them),
	// whose name is replaced by the ID. An upstream's pinned descriptor.
	Listing json.RawMessage
	Run     RunFunc
	// Admit, when set, is asked at the catalog step whether the tool may be
	// called now; its *events.Err refuses the call before policy (a
	// changed upstream descriptor: ToolChanged).
	Admit func(ctx context.Context) error
	// Offered, when set, says whether the tool is listed to a client of
	// protocol version v: an upstream offers some tools on one protocol
	// generation only. Nil: to every client.
	Offered func(v string) bool
	// Held is a tool the guard holds (an upstream's flagged descriptor):
	// found by Lookup, so its calls are refused by Admit with why, but
	// never in Tools (not listed, not searched).
	Held bool

	resolved *jsonschema.Resolved
}

// Catalog is the set of tools a bridge serves. Ids are unique. Tools of a
// source can be replaced while the bridge runs (an upstream's list
// changed); it is safe for concurrent use.
type Catalog struct {
	mu    sync.RWMutex
	tools map[string]*Tool
}

// NewCatalog checks and indexes tools: a duplicate id, a missing schema or
// run function is an error (at start-up, never at call time). An empty
// catalog is valid.
func NewCatalog(tools ...*Tool) (*Catalog, error) {
	c := &Catalog{tools: map[string]*Tool{}}
	for _, t := range tools {
		if err := prepare(t); err != nil {
			return nil, err
		}
		if _, dup := c.tools[t.ID]; dup {
			return nil, fmt.Errorf("catalog: duplicate tool id %q (from %s)", t.ID, t.Source)
		}
		c.tools[t.ID] = t
	}
	return c, nil
}

// prepare checks one tool and fills its defaults.
func prepare(t *Tool) error {
	if t.ID == "" {
		return fmt.Errorf("catalog: a tool has no id")
	}
	if t.Run == nil || t.InputSchema == nil {
		return fmt.Errorf("catalog: tool %q needs a run function and an input schema", t.ID)
	}
	if t.InputSchema.Type != "object" {
		return fmt.Errorf("catalog: tool %q: input schema must be an object", t.ID)
	}
	r, err := t.InputSchema.Resolve(nil)
	if err != nil {
		return fmt.Errorf("catalog: tool %q: input schema: %w", t.ID, err)
	}
	t.resolved = r
	if t.Name == "" {
		t.Name = t.ID
	}
	if t.Approval == "" {
		t.Approval = "never"
	}
	return nil
}

// Replace makes tools the catalog's entries of source (every tool whose
// Source is source), and returns the ids it added and removed. A tool that
// would take another source's id is an error, and nothing changes.
func (c *Catalog) Replace(source string, tools []*Tool) (added, removed []string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]*Tool{}
	for _, t := range tools {
		t.Source = source
		if err := prepare(t); err != nil {
			return nil, nil, err
		}
		if old, ok := c.tools[t.ID]; ok && old.Source != source {
			return nil, nil, fmt.Errorf("catalog: tool id %q of %s is taken by %s", t.ID, source, old.Source)
		}
		if _, dup := next[t.ID]; dup {
			return nil, nil, fmt.Errorf("catalog: duplicate tool id %q (from %s)", t.ID, source)
		}
		next[t.ID] = t
	}
	for id, t := range c.tools {
		if t.Source == source && next[id] == nil {
			delete(c.tools, id)
			removed = append(removed, id)
		}
	}
	for id, t := range next {
		if _, had := c.tools[id]; !had {
			added = append(added, id)
		}
		c.tools[id] = t
	}
	sort.Strings(added)
	sort.Strings(removed)
	return added, removed, nil
}

// Lookup returns the tool with id.
func (c *Catalog) Lookup(id string) (*Tool, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	t, ok := c.tools[id]
	return t, ok
}

// Tools returns every tool, sorted by id.
func (c *Catalog) Tools() []*Tool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Tool, 0, len(c.tools))
	for _, t := range c.tools {
		if !t.Held {
			out = append(out, t)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// validate checks args against the tool's input schema.
func (t *Tool) validate(args json.RawMessage) error {
	var v any = map[string]any{}
	if len(args) > 0 && string(args) != "null" {
		if err := json.Unmarshal(args, &v); err != nil {
			return fmt.Errorf("arguments are not JSON: %v", err)
		}
	}
	if m, ok := v.(map[string]any); ok && t.InputSchema != nil {
		// A null for an optional argument says "not given" (SEP-2243: a
		// header parameter sent null is omitted): judged as absent, and
		// forwarded as sent. A required one stays null, and is refused.
		for k, val := range m {
			if val == nil && !slices.Contains(t.InputSchema.Required, k) {
				delete(m, k)
			}
		}
	}
	if err := t.resolved.Validate(v); err != nil {
		// The checker names a JSON null by Go's reflection ("<invalid
		// reflect.Value> has type null"): say null, as the caller wrote.
		return errors.New(strings.ReplaceAll(err.Error(), "<invalid reflect.Value>", "null"))
	}
	return nil
}

// SchemaFor infers an object input schema from a Go type (see jsonschema.For).
func SchemaFor[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("executor: schema for %T: %v", *new(T), err))
	}
	return s
}
