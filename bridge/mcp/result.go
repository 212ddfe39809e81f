package mcp

import (
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
)

// toResult turns an executor result into the MCP result: structured content
// on success; on failure isError with the code, message and hint both as
// text (for the model) and as _meta["tracebridge/error"] and structured
// content.
func toResult(r executor.Result) *sdk.CallToolResult {
	if r.OK() {
		if up, ok := r.Value.(*sdk.CallToolResult); ok { // an upstream's answer, as it sent it
			return up
		}
		if text, ok := r.Value.(string); ok { // a document (a diagram): the text itself, not a JSON string
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}
		}
		b, err := json.Marshal(r.Value)
		if err != nil {
			return toResult(executor.Result{OperationID: r.OperationID, Code: events.CodeToolError, Message: "the tool's result is not JSON: " + err.Error()})
		}
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}
		if len(b) > 0 && b[0] == '{' {
			res.StructuredContent = json.RawMessage(b)
		}
		return res
	}
	// The client is told what a model can do about it (retry or not, tell
	// the user); the operator's action stays in the evidence and the UI.
	text, hint := string(r.Code)+": "+r.Message, events.HintFor(r.Code)
	if hint != "" {
		text += " (" + hint + ")"
	}
	e := map[string]string{"code": string(r.Code), "message": r.Message, "hint": hint, "operationId": r.OperationID.String()}
	return &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: text}},
		StructuredContent: map[string]any{"error": e},
		Meta:              sdk.Meta{MetaError: e},
	}
}

// declaresOutput reports whether the tool, as clients are shown it,
// declares an outputSchema.
func (s *Server) declaresOutput(name string) bool {
	t, ok := s.opts.Executor.Catalog().Lookup(name)
	if !ok || len(t.Listing) == 0 {
		return false
	}
	var d struct {
		OutputSchema json.RawMessage `json:"outputSchema"`
	}
	json.Unmarshal(t.Listing, &d)
	return len(d.OutputSchema) > 0 && string(d.OutputSchema) != "null"
}

// MetaError is the _meta key of an error result's code, message, hint
// and operation id: where every client finds them (structured content
// carries them too unless the tool declares an output schema).
const MetaError = "tracebridge/error"
