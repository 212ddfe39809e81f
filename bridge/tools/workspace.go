package tools

import (
	"context"
	"encoding/json"

	"github.com/tracebridge/tracebridge/events"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/pipe"
)

// HostCaller is what workspace tools need of the pipe client.
type HostCaller interface {
	Call(ctx context.Context, req pipe.Request) (pipe.Response, error)
}

type noArgs struct{}

// ProposeOneArgs are the arguments of propose_text_edit.
type ProposeOneArgs struct {
	Path        string `json:"path" jsonschema:"file to edit, relative to the workspace root"`
	Original    string `json:"original" jsonschema:"the exact text to replace; it must occur exactly once (empty: create the file, which must not exist, with replacement as its content)"`
	Replacement string `json:"replacement" jsonschema:"the new text"`
	Description string `json:"description,omitempty" jsonschema:"why: what the change does and why, in a sentence or two, shown to the operator who approves it"`
}

// ProposeManyArgs are the arguments of propose_text_edits.
type ProposeManyArgs struct {
	Files []struct {
		Path  string `json:"path" jsonschema:"file to edit, relative to the workspace root"`
		Edits []struct {
			Original    string `json:"original" jsonschema:"the exact text to replace; it must occur exactly once (empty, as a file's only edit: create the file, which must not exist)"`
			Replacement string `json:"replacement" jsonschema:"the new text"`
		} `json:"edits"`
	} `json:"files" jsonschema:"the files of an all-or-nothing change"`
	Description string `json:"description,omitempty" jsonschema:"why: what the change does and why, in a sentence or two, shown to the operator who approves it"`
}

// ReviewArgs are the arguments of present_review.
type ReviewArgs struct {
	// Content is required; it is optional in the schema so that its
	// absence gets the designed message from the host.
	Content string `json:"content,omitempty" jsonschema:"the review, in markdown (required); [file:line][] references (also written as code, or ranges [file:12-20][]) become links"`
	BaseURI string `json:"baseUri,omitempty" jsonschema:"the directory references are relative to (file:///abs/dir, or a path in the workspace); default the workspace root"`
	Mode    string `json:"mode,omitempty" jsonschema:"replace (default), append, or update-section"`
	Section string `json:"section,omitempty" jsonschema:"the heading whose section update-section replaces (added at the end if missing)"`
}

// reviewSchema is ReviewArgs' schema with mode's default, replace. Mode is
// not an enum in the schema: a wrong one gets Dialectic's message from the
// host ("Mode must be 'replace', 'update-section', or 'append'"), not the
// schema checker's.
func reviewSchema() *jsonschema.Schema {
	s := executor.SchemaFor[ReviewArgs]()
	if m := s.Properties["mode"]; m != nil {
		m.Default = json.RawMessage(`"replace"`)
	}
	return s
}

// strictReviewSchema is present_review's schema as clients are shown it:
// mode an enum, content required (issue 46, seed 82). The executor checks
// the lenient reviewSchema, so a wrong mode or a missing content still
// gets Dialectic's message from the host.
func strictReviewSchema() json.RawMessage {
	s := reviewSchema()
	if m := s.Properties["mode"]; m != nil {
		m.Enum = []any{"replace", "append", "update-section"}
	}
	s.Required = []string{"content"}
	b, _ := json.Marshal(s)
	return b
}

// withListed shows t to clients with schema (its InputSchema still checks
// the arguments).
func withListed(t *executor.Tool, schema json.RawMessage) *executor.Tool {
	t.RawSchema = schema
	return t
}

// reviewGuide is present_review's description: what a good review holds,
// as Dialectic asks of the AI.
const reviewGuide = "Present a review of your work to the operator as markdown, in their review panel. " +
	"Structure it as: a summary (what changed and why, in two or three sentences); the context (the problem, " +
	"constraints, what you looked at); the changes, file by file, each with a [file:line][] reference; " +
	"implementation details worth knowing; and the design decisions with the alternatives you rejected. " +
	"mode replace (default) starts the document anew, append adds to it, update-section replaces the section under " +
	"the heading named by section (or adds it at the end). References are checked against the workspace."

// Workspace returns the tools the workspace host runs, each forwarded over
// the pipe by c.
func Workspace(c HostCaller) []*executor.Tool {
	tool := func(id, command, desc string, caps []string, side bool, schema *jsonschema.Schema, shape func(json.RawMessage) (any, error)) *executor.Tool {
		return &executor.Tool{
			Descriptor: executor.Descriptor{ID: id, Description: desc, Category: "workspace", Source: "builtin", Host: "workspace",
				Capabilities: caps, SideEffects: side},
			InputSchema: schema,
			Run:         forward(c, command, shape),
		}
	}
	read := []string{config.CapWorkspaceRead}
	propose := []string{config.CapWorkspacePropose}
	same := func(a json.RawMessage) (any, error) { return a, nil }
	return []*executor.Tool{
		tool("get_active_document", pipe.CmdActiveDocument, "The document the operator has in focus: path, language, content, version; null when nothing has focus.", read, false, executor.SchemaFor[noArgs](), nil),
		tool("get_selection", pipe.CmdSelection, "The text the operator selected: path, range, text; null when nothing is selected.", read, false, executor.SchemaFor[noArgs](), nil),
		tool("get_diagnostics", pipe.CmdDiagnostics, "Problems (file, line, column, severity, source, code, message; 1-based): what the operator's editor reports when one is attached to the workspace, else the output of the diagnostics command the operator configured on the host (e.g. go vet ./...; a recent result is reused unless refresh is true), else what the workspace's language servers find (path: one file).",
			read, false, executor.SchemaFor[pipe.DiagnosticsArgs](), same),
		tool("list_projects", pipe.CmdListProjects, "Project manifests under the workspace root (go.mod, package.json, Cargo.toml, pyproject.toml, *.csproj…), skipping hidden and vendored trees.", read, false, executor.SchemaFor[noArgs](), nil),
		tool("propose_text_edit", pipe.CmdProposeEdits, "Propose replacing one exact text in one file (or creating a file: empty original). Nothing is written until an operator approves; the result gives the proposal id.", propose, true, executor.SchemaFor[ProposeOneArgs](),
			func(a json.RawMessage) (any, error) {
				var one ProposeOneArgs
				if err := json.Unmarshal(a, &one); err != nil {
					return nil, err
				}
				return map[string]any{"description": one.Description, "files": []any{map[string]any{"path": one.Path,
					"edits": []any{map[string]string{"original": one.Original, "replacement": one.Replacement}}}}}, nil
			}),
		tool("propose_text_edits", pipe.CmdProposeEdits, "Propose an all-or-nothing change to several files, each edit an exact text occurring once (a new file: one edit with an empty original). Nothing is written until an operator approves.", propose, true, executor.SchemaFor[ProposeManyArgs](), same),
		withListed(tool("present_review", pipe.CmdPresentReview, reviewGuide, read, true, reviewSchema(), defaultMode), strictReviewSchema()),
		tool("ide_query", pipe.CmdIDEQuery, "Ask the workspace's language servers a question in words (where is X called / defined, what does X do). The outcome is success (an answer with [file:line][] references), ambiguous (several symbols match: each refinement is the tool call that answers for one), or unavailable (no language server: why, and what to configure).", read, false, executor.SchemaFor[pipe.QueryArgs](), same),
		tool("find_symbol", pipe.CmdFindSymbol, "Where symbols named like query are declared in the workspace, from its language server (workspace/symbol): name, kind, container, path, 1-based line and column, and a [path:line][] reference.", read, false, executor.SchemaFor[pipe.SymbolArgs](), same),
		tool("find_definition", pipe.CmdFindDefinition, "Where the identifier at path:line:column is defined, from the workspace's language server: 1-based locations with [path:line][] references.", read, false, executor.SchemaFor[pipe.PositionArgs](), same),
		tool("find_references", pipe.CmdFindReferences, "Every place the identifier at path:line:column is used (its declaration included), from the workspace's language server: 1-based locations with the line's text and [path:line][] references.", read, false, executor.SchemaFor[pipe.PositionArgs](), same),
		tool("hover", pipe.CmdHover, "What the workspace's language server says of the identifier at path:line:column: its type, signature and documentation.", read, false, executor.SchemaFor[pipe.PositionArgs](), same),
		tool("document_symbols", pipe.CmdDocumentSymbols, "The symbols a file declares (functions, types, methods, fields…), from the workspace's language server, with 1-based lines.", read, false, executor.SchemaFor[pipe.DocumentArgs](), same),
	}
}

// defaultMode gives present_review's mode its default, replace.
func defaultMode(args json.RawMessage) (any, error) {
	var a ReviewArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: err.Error()}
	}
	if a.Mode == "" {
		a.Mode = "replace"
	}
	return a, nil
}

// forward sends the call to the host and turns pipe and host failures into
// coded results.
func forward(c HostCaller, command string, shape func(json.RawMessage) (any, error)) executor.RunFunc {
	return func(ctx context.Context, call executor.Call) (any, error) {
		var payload json.RawMessage
		if shape != nil {
			v, err := shape(call.Args)
			if err != nil {
				return nil, err
			}
			if payload, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		resp, err := c.Call(ctx, pipe.Request{Command: command, RequestID: call.RequestID.String(), OperationID: call.OperationID.String(), Payload: payload})
		if err != nil {
			return nil, err // a coded *events.Err (PipeUnavailable says what to start) or a context error
		}
		if !resp.OK {
			return nil, &events.Err{Code: resp.Code, Msg: resp.Message}
		}
		return resp.Payload, nil
	}
}
