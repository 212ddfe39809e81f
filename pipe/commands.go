package pipe

// The commands a workspace host answers (docs/pipe-protocol.md): the ones
// the bridge's workspace tools send, then the operator's.
const (
	CmdActiveDocument = "get_active_document"
	CmdSelection      = "get_selection"
	CmdDiagnostics    = "get_diagnostics"
	CmdListProjects   = "list_projects"
	CmdProposeEdits   = "propose_text_edits"
	CmdPresentReview  = "present_review"

	CmdSetFocus        = "set_focus"
	CmdProposalsList   = "proposals.list"
	CmdProposalsShow   = "proposals.show"
	CmdProposalsDecide = "proposals.decide"
	CmdProposalsReset  = "proposals.reset"
	CmdReviewCommit    = "review.commit"
	CmdReviewsList     = "reviews.list"
	CmdWorkspaceTree   = "workspace.tree"
	CmdWorkspaceFile   = "workspace.file"
	CmdReviewsShow     = "reviews.show"

	// Language intelligence: the host's language servers.
	CmdFindDefinition  = "lsp.definition"
	CmdFindReferences  = "lsp.references"
	CmdHover           = "lsp.hover"
	CmdDocumentSymbols = "lsp.document_symbols"
	CmdFindSymbol      = "lsp.symbols"
	CmdIDEQuery        = "lsp.query"

	// An editor's (docs/pipe-protocol.md, "Editors").
	CmdEditorAttach      = "editor.attach"
	CmdEditorFocus       = "editor.focus"
	CmdEditorDocument    = "editor.document"
	CmdEditorDiagnostics = "editor.diagnostics"
)
