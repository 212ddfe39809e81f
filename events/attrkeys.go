package events

// Attribute keys more than one package reads, beside the kinds that write
// them (kinds.go). A reader takes the constant, never a literal, so a
// renamed key cannot leave a reader behind. (Approval keys: approval.go;
// origin keys: origin.go; the pins view's: projections/pins.go.)
const (
	AttrMethod   = "method"   // mcp.*: the JSON-RPC method
	AttrParams   = "params"   // mcp.response.sent: the request's params, recorded once every secret the call resolved is known
	AttrAnswer   = "answer"   // mcp.response.sent: {"result":…} or {"error":…}, whole
	AttrEnvelope = "envelope" // executor.audit: the audit envelope (JSON)
	AttrError    = "error"    // a failure's message, redacted
	AttrBy       = "by"       // who decided: an operator, "config", "timeout", "bridge"
	AttrCommand  = "command"  // pipe.*, host.*: the host command; upstream.started: the command line
	AttrPayload  = "payload"  // pipe.request.sent: the command's arguments
	AttrPath     = "path"     // the socket, file or config a step used
	AttrProposal = "proposal" // the proposal a call made or decided
	AttrServer   = "server"   // upstream.*: the configured server's name
	AttrClient   = "client"   // mcp.request.received, executor.*, approval.requested: the MCP client (clientInfo name/version)
	// policy.decided: the [policy.rules] rule that decided and its effect,
	// and the policy version in force (config.PolicyVersion).
	AttrRule          = "rule"
	AttrEffect        = "effect"
	AttrPolicyVersion = "policyVersion"
)
