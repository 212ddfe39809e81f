package policy

import (
	"encoding/json"
	"time"
)

// Tool is what the rules see of the tool a call is for.
type Tool struct {
	ID     string // the catalog id (SERVER__tool, or the tool's own name with prefix = false)
	Server string // the upstream server; "" for the bridge's own tools
	Name   string // the server's own name for it
	// Annotations are its MCP annotations with the specification's
	// defaults (projections.AnnotationFlags).
	Annotations map[string]bool
}

// NewInput is what the rules see of one call: the one builder for a call
// decided live (the executor) and a recorded one decided again (`policy
// test`), so the two cannot disagree. Arguments that are not a JSON object
// give the rules no fields.
func NewInput(t Tool, args json.RawMessage, client, session string, caller Caller, at time.Time) Input {
	in := Input{Tool: t.ID, Server: t.Server, Qualified: Qualified(t.Server, t.Name), Annotations: t.Annotations,
		Client: client, Session: session, Caller: caller, Time: at, RawArgs: args}
	if len(args) > 0 {
		json.Unmarshal(args, &in.Args)
	}
	return in
}

// NewResultInput is what a result rule (phase = "result") sees: the call
// as NewInput has it, and the result as the client would read it: text
// (its text contents, joined by line breaks), structured (its structured
// content), isError.
func NewResultInput(in Input, text string, structured any, isError bool) Input {
	in.Phase = PhaseResult
	in.Result = map[string]any{"text": text, "structured": structured, "isError": isError}
	if structured == nil {
		in.Result["structured"] = map[string]any{}
	}
	return in
}
