package events

// Attributes of approval events (approval.requested, approval.decided),
// read by the executor, the approvals projection, the CLI and the UI.
const (
	AttrApprovalID = "approvalId" // the operation id of the call waiting
	AttrArgsHash   = "argsHash"   // SHA-256 of the canonical arguments
	AttrPin        = "pin"        // an upstream tool's descriptor hash the call is admitted under
	AttrDecision   = "decision"   // approve | deny
	AttrDeadline   = "deadline"   // RFC 3339; no decision by then is a denial
	AttrTool       = "tool"
	AttrReason     = "reason"
	// AttrAnnotations is the tool's MCP annotations (JSON) as the client is
	// shown them, on approval.requested: the operator sees whether it
	// says it is read-only or destructive.
	AttrAnnotations = "annotations"
	// AttrDeciders (comma-separated groups) and AttrFourEyes ("true") say
	// who may approve, on approval.requested (policy.Deciders); a
	// decision names its decider as identity.DeciderPrefix attributes.
	AttrDeciders = "deciders"
	AttrFourEyes = "fourEyes"
)

// Decisions: the values of AttrDecision.
const (
	Approve = "approve"
	Deny    = "deny"
)
