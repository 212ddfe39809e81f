package upstream

import (
	"context"
	"encoding/json"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/bridge/executor"
)

// executorTool is the catalog entry of a listed tool: exposed as
// server__tool, needing the server's capability, side-effecting unless its
// annotations say readOnlyHint (or [servers.NAME] read_only lists it),
// approved per [servers.NAME] approval (default: side-effecting tools
// always, through [approval] like any side-effecting tool), and admitted
// only while its descriptor is the pinned one. A tool whose schema is not
// an object is left out (its listing is recorded in its pin).
func (s *Server) executorTool(st *toolState) *executor.Tool {
	t := st.tool
	raw, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil
	}
	var probe struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(raw, &probe) != nil || probe.Type != "object" {
		s.g.opts.Logger.Warn("upstream tool left out: its input schema is not an object", "server", s.name, "tool", t.Name)
		return nil
	}
	readOnly := t.Annotations != nil && t.Annotations.ReadOnlyHint || s.cfg.IsReadOnly(t.Name)
	approval := s.cfg.ApprovalOf(t.Name)
	if approval == "" {
		approval = "never"
		if !readOnly {
			approval = "always"
		}
	}
	name := t.Name
	return &executor.Tool{
		Descriptor: executor.Descriptor{
			ID: s.exposed(name), Name: name, Description: t.Description, Category: "upstream", Host: "upstream:" + s.name,
			Capabilities: []string{s.cfg.CapabilityOf(s.name)}, SideEffects: !readOnly, Approval: approval, Pin: st.hash,
			// The upstream's own deadline (its timeout, started again by
			// each progress report) ends a silent call first, so its
			// timeout is UpstreamTimeout; the executor's bounds the whole.
			Timeout: max(s.cfg.RequestTimeout()+2*time.Second, maxCallDuration),
		},
		InputSchema: checkable(raw),
		RawSchema:   raw,
		Listing:     listing(st),
		Held:        st.held,
		Run:         func(ctx context.Context, c executor.Call) (any, error) { return s.call(ctx, c, name) },
		Admit:       func(ctx context.Context) error { return s.admit(ctx, name) },
	}
}

// listing is what clients are shown of a tool: what its pin covers (the
// canonical descriptor: title, description, schemas, annotations), so
// the hash covers exactly what a client sees.
func listing(st *toolState) json.RawMessage {
	if st.desc != "" {
		return json.RawMessage(st.desc)
	}
	desc, _ := describe(st.tool)
	return json.RawMessage(desc)
}

// maxCallDuration bounds an upstream call that keeps reporting progress.
const maxCallDuration = 10 * time.Minute

// checkable is the part of an upstream's schema the executor can check:
// the schema itself when jsonschema-go resolves it (draft 2020-12), else
// only that the arguments are an object; the upstream checks the rest.
func checkable(raw json.RawMessage) *jsonschema.Schema {
	var m map[string]any
	if json.Unmarshal(raw, &m) == nil {
		delete(m, "$schema") // upstreams often name draft-07; the keywords that matter read the same
		if b, err := json.Marshal(m); err == nil {
			var sch jsonschema.Schema
			if json.Unmarshal(b, &sch) == nil && sch.Type == "object" {
				if _, err := sch.Resolve(nil); err == nil {
					return &sch
				}
			}
		}
	}
	return &jsonschema.Schema{Type: "object"}
}
