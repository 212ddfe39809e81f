package pipe

// The payloads of the workspace tools' commands, declared once for both
// ends: the bridge's tools take them as their MCP input (the jsonschema
// tags are the descriptions a model reads) and send them as they are; the
// host decodes them. Lines and columns are 1-based, columns in bytes. (The
// editors' own commands, editor.*, carry the host's editor payloads:
// host.EditorDocument and its kin.)

// PositionArgs names a place in a workspace file: lsp.definition,
// lsp.references, lsp.hover (find_definition, find_references, hover).
type PositionArgs struct {
	Path   string `json:"path" jsonschema:"a file, relative to the workspace root"`
	Line   int    `json:"line" jsonschema:"1-based line"`
	Column int    `json:"column,omitempty" jsonschema:"1-based column in bytes (default 1); put it on the identifier"`
}

// DocumentArgs names a workspace file: lsp.document_symbols
// (document_symbols).
type DocumentArgs struct {
	Path string `json:"path" jsonschema:"a file, relative to the workspace root"`
}

// SymbolArgs is lsp.symbols' payload (find_symbol).
type SymbolArgs struct {
	Query    string `json:"query" jsonschema:"a symbol's name, or part of it"`
	Language string `json:"language,omitempty" jsonschema:"go, typescript, python or c (default: the languages of the workspace root)"`
	Limit    int    `json:"limit,omitempty" jsonschema:"at most this many (default 100)"`
}

// QueryArgs is lsp.query's payload (ide_query).
type QueryArgs struct {
	Query string `json:"query" jsonschema:"a question about the code naming the symbol (in backticks when it is also an English word): where is ValidateToken called? what does Parse do? where is Config defined?"`
}

// DiagnosticsArgs is get_diagnostics' payload.
type DiagnosticsArgs struct {
	Refresh bool   `json:"refresh,omitempty" jsonschema:"run the command now instead of reusing a recent result"`
	Path    string `json:"path,omitempty" jsonschema:"only this file (default: the whole workspace)"`
}
