package events

// Code names why a step did not succeed. The same code travels unchanged from
// the event to the tool result, the audit envelope, the diagram and the UI.
type Code string

const (
	// Log and bus.
	CodeMalformedAppend Code = "MalformedAppend" // an append request could not be decoded
	CodeInvalidEvent    Code = "InvalidEvent"    // an event lacks an id, has an unknown kind…
	CodeTooLarge        Code = "TooLarge"        // a request or event exceeds its size cap
	CodeChainBroken     Code = "ChainBroken"     // the stored hash chain does not verify
	CodeLogUnavailable  Code = "LogUnavailable"  // the store cannot be written (fsync error, closed)
	CodeHubUnavailable  Code = "HubUnavailable"  // no hub answers for the data dir
	CodeUnknownQuery    Code = "UnknownQuery"    // a query subject the hub does not serve

	// Bridge and host (used from the bridge issue on).
	CodeUnknownTool       Code = "UnknownTool"
	CodePolicyDenied      Code = "PolicyDenied"
	CodeApprovalDenied    Code = "ApprovalDenied"
	CodeApprovalTimeout   Code = "ApprovalTimeout"
	CodeSecretUnresolved  Code = "SecretUnresolved"
	CodePipeUnavailable   Code = "PipeUnavailable"
	CodePipeTimeout       Code = "PipeTimeout"
	CodeUnknownCommand    Code = "UnknownCommand"
	CodeMalformedEnvelope Code = "MalformedEnvelope"
	CodeDrift             Code = "Drift"
	CodeAmbiguous         Code = "Ambiguous"

	// Executor.
	CodeInvalidArguments Code = "InvalidArguments" // arguments fail the tool's input schema
	CodeConfigInvalid    Code = "ConfigInvalid"    // tracebridge.toml is broken: everything is denied
	CodeToolError        Code = "ToolError"        // the tool ran and failed
	CodeToolPanic        Code = "ToolPanic"        // the tool panicked; the bridge survived
	CodeToolTimeout      Code = "ToolTimeout"      // the tool ran past its timeout
	CodeCancelled        Code = "Cancelled"        // the client cancelled the call
	CodeMalformedFrame   Code = "MalformedFrame"   // a JSON-RPC line could not be parsed
	CodeInvalidRequest   Code = "InvalidRequest"   // a JSON-RPC request refused as sent: its id is in flight, null or not exactly representable
	CodeInvalidManifest  Code = "InvalidManifest"  // a discovered tool's manifest is unusable
	CodeDirMissing       Code = "DirMissing"       // a discovery directory does not exist
	CodeForeignPeer      Code = "ForeignPeer"      // a pipe peer runs as another user
	CodeUnsafePath       Code = "UnsafePath"       // a socket path is squatted or its directory is open to others
	CodePathRefused      Code = "PathRefused"      // a workspace path escapes the root or names no regular file
	CodeMissingStep      Code = "MissingStep"      // a run answered with a step it opened never closed
)

// Codes of the operator UI's access rules.
const (
	CodeForeignHost     Code = "ForeignHost"     // the Host header is not a loopback name of the UI (DNS rebinding)
	CodeUnauthenticated Code = "Unauthenticated" // no valid launch token or session cookie
	CodeForeignOrigin   Code = "ForeignOrigin"   // a state change from another origin, or with none
	CodeCSRFMismatch    Code = "CSRFMismatch"    // a state change without this session's CSRF token
	CodeMethodRefused   Code = "MethodRefused"   // a state-changing route asked with GET (or the reverse)
	CodeNotPending      Code = "NotPending"      // the decision is taken already: exactly one wins
	CodeHashChanged     Code = "HashChanged"     // the decision names other content than is pending now
)

// OutcomeOf is the outcome a step ends with when it fails with code (OK for
// no code): refusals are denied, deadlines time out, missing peers are
// unavailable, everything else is an error.
func OutcomeOf(c Code) Outcome {
	switch c {
	case "":
		return OK
	case CodePolicyDenied, CodeApprovalDenied, CodeConfigInvalid, CodeLogUnavailable,
		CodeForeignHost, CodeUnauthenticated, CodeForeignOrigin, CodeCSRFMismatch, CodeMethodRefused:
		return Denied
	case CodeApprovalTimeout, CodeToolTimeout, CodePipeTimeout:
		return Timeout
	case CodeCancelled:
		return Cancelled
	case CodePipeUnavailable, CodeHubUnavailable:
		return Unavailable
	}
	return Error
}
