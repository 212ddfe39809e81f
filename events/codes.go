package events

import "net/http"

// Code names why a step did not succeed. The same code travels unchanged from
// the event to the tool result, the audit envelope, the diagram and the UI.
type Code string

const (
	// Log and bus.
	CodeMalformedAppend Code = "MalformedAppend" // an append request could not be decoded
	CodeOriginMismatch  Code = "OriginMismatch"  // a stream message's origin is not the subject it was published on
	CodeStreamGap       Code = "StreamGap"       // stream messages a collector never received (purged or deleted)
	CodeInvalidEvent    Code = "InvalidEvent"    // an event lacks an id, has an unknown kind…
	CodeTooLarge        Code = "TooLarge"        // a request or event exceeds its size cap
	CodeChainBroken     Code = "ChainBroken"     // the stored hash chain does not verify
	CodeLogUnavailable  Code = "LogUnavailable"  // the store cannot be written (fsync error, closed)
	CodeHubUnavailable  Code = "HubUnavailable"  // no hub answers for the data dir
	CodeUnknownQuery    Code = "UnknownQuery"    // a query subject the hub does not serve
	CodeMalformedQuery  Code = "MalformedQuery"  // a query request could not be decoded
	CodePayloadMissing  Code = "PayloadMissing"  // an event refers to a payload the store does not hold
	CodeExportIdle      Code = "ExportIdle"      // a process configured to export (OTLP) cannot: another process holds the hub, or its exporter cannot be built

	// Bridge and host (used from the bridge issue on).
	CodeUnknownTool      Code = "UnknownTool"
	CodePolicyDenied     Code = "PolicyDenied"
	CodePolicyRuleFailed Code = "PolicyRuleFailed"
	CodeApprovalDenied   Code = "ApprovalDenied"
	CodeApprovalTimeout  Code = "ApprovalTimeout"
	CodeSecretUnresolved Code = "SecretUnresolved"
	CodePipeUnavailable  Code = "PipeUnavailable"
	CodePipeTimeout      Code = "PipeTimeout"

	CodeLanguageServerUnavailable Code = "LanguageServerUnavailable" // none configured or installed for the language, or restarting after failures
	CodeLanguageServerFailed      Code = "LanguageServerFailed"      // it crashed, wrote garbage or refused the request
	CodeLanguageServerTimeout     Code = "LanguageServerTimeout"
	CodeUnknownCommand            Code = "UnknownCommand"
	CodeMalformedEnvelope         Code = "MalformedEnvelope"
	CodeDrift                     Code = "Drift"
	CodeApplyInterrupted          Code = "ApplyInterrupted"
	CodeAmbiguous                 Code = "Ambiguous"

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

// Codes of the gateway: upstream MCP servers and their pinned tools.
const (
	CodeUpstreamUnavailable  Code = "UpstreamUnavailable"  // the upstream could not be started or dialed, or exited (the message says which command or URL and how)
	CodeUpstreamTimeout      Code = "UpstreamTimeout"      // the upstream did not answer within its timeout
	CodeUpstreamError        Code = "UpstreamError"        // the upstream answered with a JSON-RPC error (its code and message) or a tool error
	CodeUpstreamProtocol     Code = "UpstreamProtocol"     // the upstream broke the protocol: garbage, an oversized frame, a result that does not decode
	CodeToolChanged          Code = "ToolChanged"          // the tool's descriptor differs from the one pinned: refused until an operator accepts it
	CodePlaintextUpstream    Code = "PlaintextUpstream"    // an http:// upstream on another host: refused unless allow_plaintext = true
	CodeToolFlagged          Code = "ToolFlagged"          // the guard flagged the tool's descriptor (or first_sight = review): held until an operator accepts it
	CodeResultBlocked        Code = "ResultBlocked"        // the guard blocked a result before the client read it
	CodeServerChanged        Code = "ServerChanged"        // the server's identity (its command and executable, URL origin, TLS key or serverInfo) differs from the one pinned: not contacted until an operator accepts it
	CodeUpstreamUnauthorized Code = "UpstreamUnauthorized" // the upstream asks for OAuth authorization the bridge does not hold
	CodeClientError          Code = "ClientError"          // the client answered the upstream's request (sampling, elicitation, roots) with an error
	CodeClientIncapable      Code = "ClientIncapable"      // the upstream asked the client for what it did not declare (sampling, elicitation, roots), or no client session was there to ask
)

// Codes of the front door's access tokens ([auth]).
const (
	CodeInsufficientScope Code = "InsufficientScope" // a valid access token without a scope the front door requires
	CodeIssuerUnreachable Code = "IssuerUnreachable" // the authorization server's metadata or keys could not be fetched to check a token
	CodeSessionNotOwned   Code = "SessionNotOwned"   // a request for an HTTP session another user opened
	CodeRoleRefused       Code = "RoleRefused"       // a UI action the signed-in person's role ([auth.roles]) does not allow, or a person in no role
	CodeDeciderRefused    Code = "DeciderRefused"    // an approval given by someone [approval] deciders or four_eyes exclude: the call is denied
)

// Codes of the operator UI's access rules.
const (
	CodeForeignHost     Code = "ForeignHost"     // the Host header is not a loopback name of the UI (DNS rebinding)
	CodeUnauthenticated Code = "Unauthenticated" // no valid launch token or session cookie; no valid bearer or access token
	CodeForeignOrigin   Code = "ForeignOrigin"   // a state change from another origin, or with none
	CodeCSRFMismatch    Code = "CSRFMismatch"    // a state change without this session's CSRF token
	CodeMethodRefused   Code = "MethodRefused"   // a state-changing route asked with GET (or the reverse)
	CodeNotPending      Code = "NotPending"      // the decision is taken already: exactly one wins
	CodeHashChanged     Code = "HashChanged"     // the decision names other content than is pending now
	CodeNotApproved     Code = "NotApproved"     // a proposal applied before it was approved
	CodeNoProposal      Code = "NoProposal"      // no proposal has that id
)

// codeInfo is what a failing step with a code means: its outcome, what an
// operator can do about it, and where they differ from what the outcome
// implies, its severity and risk in the audit envelope, its HTTP status
// when a request is refused with it, and whether sending the same thing
// again may succeed. One table: the tool result, the audit envelope, the
// verdict, the diagram, the UI and the HTTP front doors all read it.
type codeInfo struct {
	outcome  Outcome
	action   string
	hint     string // what the AI client is told (the tool result), when it differs from nothing
	severity string // info | warning | error; "": from the outcome
	risk     string // low | medium | high; "": low
	status   int    // HTTP status; 0: from the outcome
	retry    bool   // the same request may succeed later
}

var codeTable = map[Code]codeInfo{
	CodeMalformedAppend: {outcome: Error, action: "a process sent the hub an append it could not decode: check that every process of the data dir runs the same tracebridge version"},
	CodeOriginMismatch:  {outcome: Denied, action: "an event claims an origin other than the subject its publisher published on: that machine is misconfigured (--nats-user, --nats-machine) or forging another's events; check it and the cluster's per-user permissions"},
	CodeStreamGap:       {outcome: Error, action: "messages of the cluster's stream were deleted or purged before this collector stored them: the evidence they held is gone from every collector that had not stored it; find who purged (the cluster's audit), and give members no purge or delete permission (docs/cluster.md)"},
	CodeInvalidEvent:    {outcome: Error, action: "a process recorded an event the catalog does not know: check that every process of the data dir runs the same tracebridge version"},
	CodeTooLarge:        {outcome: Error, action: "something exceeded its size limit (the message names it): send less in one request", status: http.StatusRequestEntityTooLarge},
	CodeChainBroken:     {outcome: Denied, action: "the log's hash chain does not verify: run `tracebridge verify` to find the first bad seq, and keep a copy of the data dir before anything else"},
	CodeLogUnavailable:  {outcome: Denied, action: "the event log refuses writes (the message says why: a disk, a broken chain, an unreachable cluster): run `tracebridge verify` and check the hub's stderr; free disk space if it is full, bring the cluster back if it is down", hint: "this server cannot record calls right now and refuses them; tell the user", severity: "error", risk: "high"},
	CodeExportIdle:      {outcome: Unavailable, action: "only the process that holds the data dir's hub exports, with its own configuration's [otlp]: give that process (the message names it) the same [otlp], or start `tracebridge serve --config FILE` before the AI clients; an exporter that cannot be built names what to fix in [otlp]", severity: "warning", risk: "low"},
	CodeHubUnavailable:  {outcome: Unavailable, action: "no hub answers for the data dir: start `tracebridge serve` or `tracebridge up`, or check that every process uses the same --data", retry: true},
	CodeUnknownQuery:    {outcome: Error, action: "a process asked the hub a query it does not serve: check that every process of the data dir runs the same tracebridge version"},
	CodeMalformedQuery:  {outcome: Error, action: "a process asked the hub a query it could not decode (or a part past a payload's end): check that every process of the data dir runs the same tracebridge version"},
	CodePayloadMissing:  {outcome: Error, action: "an event refers to a payload the log does not hold: run `tracebridge verify`; a process that appends must store a payload before the event that refers to it"},

	CodeUnknownTool:               {outcome: Error, action: "the client called a tool this bridge does not serve: check tools/list (and [discovery] for discovered tools)", hint: "call tools/list for the tools this server offers"},
	CodePolicyDenied:              {outcome: Denied, action: "the [policy] table of tracebridge.toml refuses this call (the message says whether the tool is listed in deny, needs a capability that grant lacks, or a [policy.rules] rule denies it): change [policy] if the call should run (`tracebridge policy explain REQUEST` shows the rules)", hint: "this server's policy does not allow this call; do not retry it: tell the user, who decides the policy", severity: "warning", risk: "medium"},
	CodePolicyRuleFailed:          {outcome: Denied, action: "a [policy.rules] rule could not be evaluated for this call (the message names it and why: a field the arguments lack, which has(args.x) guards, or its cost limit), so it denied the call: fix the rule (`tracebridge policy explain REQUEST`)", hint: "this server's policy could not decide this call and refused it; do not retry it: tell the user", severity: "warning", risk: "medium"},
	CodeApprovalDenied:            {outcome: Denied, action: "an operator or [approval] mode denied the call: re-run it and approve it with `tracebridge approvals` if it was intended", hint: "the call was declined by the person who approves calls and did not run; do not retry it unless the user asks you to", severity: "warning", risk: "medium"},
	CodeApprovalTimeout:           {outcome: Timeout, action: "nobody decided in time: answer with `tracebridge approvals list` / `approve` while the call waits, or raise [approval] timeout", hint: "nobody approved the call in time and it did not run; tell the user it needs approval, and retry only when they say so", severity: "warning", risk: "medium"},
	CodeSecretUnresolved:          {outcome: Error, action: "set the environment variable or file that the tool's [secrets] reference names, then retry", hint: "the tool's credentials are not set up; tell the user: retrying will not help", severity: "warning", risk: "high"},
	CodePipeUnavailable:           {outcome: Unavailable, action: "start the workspace host: `tracebridge up --root <workspace>` (or `tracebridge host --root <workspace>`); set TRACEBRIDGE_HOST if it listens elsewhere", hint: "the user's workspace host is not running, so workspace tools cannot answer; tell the user: retrying now fails the same way"},
	CodePipeTimeout:               {outcome: Timeout, action: "the workspace host did not answer in time: check it is responsive, or raise [pipe] timeout in tracebridge.toml", hint: "the workspace host did not answer in time; you may retry once"},
	CodeLanguageServerUnavailable: {outcome: Unavailable, action: "install the language server the message names, or configure one under [lsp.<language>] command in tracebridge.toml", hint: "no language server answers for this language now; fall back to text search, and tell the user if it matters"},
	CodeLanguageServerFailed:      {outcome: Error, action: "the language server crashed, wrote something that is not the protocol, or refused the request (the message quotes it): check its version and its stderr in the event", hint: "the language server failed on this request; you may retry once, else fall back to text search"},
	CodeLanguageServerTimeout:     {outcome: Timeout, action: "the language server did not answer in time (it was stopped and restarts on the next request): check its load, or raise [lsp.<language>] timeout", hint: "the language server did not answer in time; retry once, or fall back to text search"},
	CodeUnknownCommand:            {outcome: Error, action: "the host does not serve that command: check that the bridge and the host run the same tracebridge version", hint: "the workspace host and this server are different versions; tell the user"},
	CodeMalformedEnvelope:         {outcome: Error, action: "a pipe frame was not a valid envelope: check that the bridge and the host run the same tracebridge version", hint: "the workspace host and this server are different versions; tell the user"},
	CodeDrift:                     {outcome: Error, action: "the file changed since the proposal was made: ask for a new proposal against the current file", hint: "the file changed since the edit was proposed; read it again and propose against its current content", status: http.StatusConflict},
	CodeApplyInterrupted:          {outcome: Error, action: "the host stopped (a crash or power loss) while applying, before any file was written; nothing changed: ask for the proposal again", hint: "nothing was changed; propose the edit again", status: http.StatusConflict},
	CodeAmbiguous:                 {outcome: Error, action: "the original text occurs more than once (or not at all): propose again with more surrounding context", hint: "the original text occurs more than once or not at all; quote more surrounding text and propose again", status: http.StatusConflict},

	CodeInvalidArguments: {outcome: Error, action: "the arguments do not fit the tool's input schema or limits (the message says which): fix them and call again", hint: "fix the arguments as the message says and call again", status: http.StatusBadRequest},
	CodeConfigInvalid:    {outcome: Denied, action: "tracebridge.toml is broken, so every tool is denied: run `tracebridge config check --config <file>` and fix what it names", hint: "this server's configuration is broken and every tool is refused; tell the user", severity: "warning", risk: "medium"},
	CodeToolError:        {outcome: Error, action: "the tool ran and failed: see the message", hint: "the tool failed; the message says why", severity: "error", risk: "high"},
	CodeToolPanic:        {outcome: Error, action: "the tool crashed and the bridge kept running: report it with this request id", hint: "the tool crashed; tell the user, and do not retry the same call", severity: "error", risk: "high"},
	CodeToolTimeout:      {outcome: Timeout, action: "raise the tool's timeout (its table under [tools] in tracebridge.toml), or narrow the call", hint: "the call took too long and was stopped; narrow it (less input) or tell the user", severity: "error", risk: "medium"},
	CodeCancelled:        {outcome: Cancelled, action: "the client cancelled the call: nothing to do unless it was unexpected", hint: "the call was cancelled and did not finish"},
	CodeMalformedFrame:   {outcome: Error, action: "the client sent a line that is not JSON-RPC: check the client", status: http.StatusBadRequest},
	CodeInvalidRequest:   {outcome: Error, action: "the client reused a request id still in flight, or sent an id that cannot be echoed exactly: check the client"},
	CodeInvalidManifest:  {outcome: Error, action: "fix the discovered tool's *.tool.json manifest (the message names the problem)"},
	CodeDirMissing:       {outcome: Error, action: "create the directory named in [discovery] dirs, or remove it from tracebridge.toml"},
	CodeForeignPeer:      {outcome: Denied, action: "another user's process is on the other end of the socket: stop it, and point TRACEBRIDGE_HOST at your own host's socket"},
	CodeUnsafePath:       {outcome: Denied, action: "the socket path is squatted or its directory is open to others: remove the stale file or fix the directory's owner and mode (0700)"},
	CodePathRefused:      {outcome: Denied, action: "use a path inside the workspace root that names a regular file", hint: "use a path relative to the workspace that names a regular file inside it"},
	CodeMissingStep:      {outcome: Error, action: "a boundary answered without recording the end of its step: report it with this request id"},

	CodeUpstreamUnavailable:  {outcome: Unavailable, action: "the upstream MCP server could not be reached: run the command or open the URL the message names to see why, fix that server's table under [servers] in tracebridge.toml, then call again", hint: "the server behind this tool cannot be reached; tell the user: retrying now fails the same way", severity: "error", risk: "medium"},
	CodeUpstreamTimeout:      {outcome: Timeout, action: "the upstream MCP server did not answer in time: check it is responsive, or raise that server's timeout under [servers] in tracebridge.toml", hint: "the server behind this tool did not answer in time; you may retry once", severity: "error", risk: "medium"},
	CodeUpstreamError:        {outcome: Error, action: "the upstream MCP server answered with an error (its code and message follow): fix the call or the server", hint: "the server behind this tool answered with an error; the message says why", severity: "error", risk: "high"},
	CodeUpstreamProtocol:     {outcome: Error, action: "the upstream MCP server broke the protocol (the message says how): report it to its authors; the bridge restarts it on the next call", hint: "the server behind this tool misbehaved; tell the user", severity: "error", risk: "high"},
	CodeUpstreamUnauthorized: {outcome: Denied, action: "the upstream MCP server needs OAuth authorization: run `tracebridge servers login <server>` once (it opens your browser), then call again", hint: "the server behind this tool needs the user to sign in; tell them: retrying will not help"},
	CodeClientError:          {outcome: Error, action: "the MCP client answered the upstream's sampling, elicitation or roots request with an error: see the client's log; the upstream was given that error", hint: "the tool asked this client for something (sampling, elicitation or roots) and the client answered with an error"},
	CodeClientIncapable:      {outcome: Unavailable, action: "the upstream asked the MCP client for sampling, elicitation or roots, which that client does not offer (or no client call was in flight to ask): use a client that does, or a tool that does not need it", hint: "the tool needs something this client does not offer (sampling, elicitation or roots)"},
	CodePlaintextUpstream:    {outcome: Denied, action: "the server's url is http:// to another host: its headers and tokens would cross the network in clear; use https://, or set allow_plaintext = true on its [servers.NAME] table if the network is yours", hint: "the server behind this tool is configured insecurely and was not contacted; tell the user", severity: "warning", risk: "high"},
	CodeToolFlagged:          {outcome: Denied, action: "the guard held this tool on first sight: read why with `tracebridge tools list` (or the UI's approvals page), and accept it with `tracebridge tools accept <tool>` only if its description is what its server should say", hint: "this tool's description looked like an attempt to instruct you and is held until the user reviews it; do not retry", severity: "warning", risk: "high"},
	CodeResultBlocked:        {outcome: Denied, action: "the guard blocked the result (the event names the rule and the text): if it is benign, set that rule's action for the server in [servers.NAME] guard", hint: "the tool's result was withheld because it looked like an attack; tell the user", severity: "warning", risk: "high"},
	CodeServerChanged:        {outcome: Denied, action: "the server is not the one pinned (another command or executable, another URL origin, another TLS key or serverInfo): review it with `tracebridge tools diff server:NAME` and accept it with `tracebridge tools accept server:NAME --hash …` (or on the UI's approvals page)", hint: "the server behind this tool changed since it was approved and was not contacted; tell the user, do not retry", severity: "warning", risk: "high"},
	CodeToolChanged:          {outcome: Denied, action: "the tool's description, schema or annotations changed since it was pinned: review the change with `tracebridge tools diff <tool>` and accept it with `tracebridge tools accept <tool>` (or on the UI's approvals page)", hint: "this tool changed since it was approved for use and is refused until the user reviews it; do not retry", severity: "warning", risk: "high"},

	CodeForeignHost:       {outcome: Denied, action: "open the UI at the URL `tracebridge ui` prints", status: http.StatusMisdirectedRequest},
	CodeUnauthenticated:   {outcome: Denied, action: "open the URL `tracebridge ui` prints: its token signs the browser in; over `mcp --http`, send `tracebridge token` or an access token of the [auth] issuer", status: http.StatusUnauthorized},
	CodeInsufficientScope: {outcome: Denied, action: "ask the authorization server for a token with the scopes the WWW-Authenticate header names", status: http.StatusForbidden},
	CodeIssuerUnreachable: {outcome: Error, action: "check that [auth] issuer (or jwks_url) answers from this machine", status: http.StatusServiceUnavailable},
	CodeRoleRefused:       {outcome: Denied, action: "ask for a role that allows it ([auth.roles] viewer, approver, admin name the groups)", status: http.StatusForbidden},
	CodeDeciderRefused:    {outcome: Denied, action: "another approver (signed in to the UI, in [approval] deciders, not the one who made the call under four_eyes) decides when the client calls again", status: http.StatusForbidden},
	CodeSessionNotOwned:   {outcome: Denied, action: "initialize a session of your own: an Mcp-Session-Id belongs to the user who opened it", status: http.StatusForbidden},
	CodeForeignOrigin:     {outcome: Denied, action: "decide from the UI's own pages"},
	CodeCSRFMismatch:      {outcome: Denied, action: "reload the page and decide again"},
	CodeMethodRefused:     {outcome: Denied, action: "state changes are POSTs from the UI's own forms; pages are read with GET", status: http.StatusMethodNotAllowed},
	CodeNotPending:        {outcome: Denied, action: "it was decided already (or timed out): reload to see what happened", status: http.StatusConflict},
	CodeHashChanged:       {outcome: Denied, action: "what waits now differs from what was shown: reload, look again, and decide", status: http.StatusConflict},
	CodeNotApproved:       {outcome: Denied, action: "approve the proposal before applying it", status: http.StatusConflict},
	CodeNoProposal:        {outcome: Error, action: "list the proposals with `tracebridge proposals list` and use an id from it", status: http.StatusNotFound},
}

// codes lists every code, for tests and docs.
func codes() []Code {
	out := make([]Code, 0, len(codeTable))
	for c := range codeTable {
		out = append(out, c)
	}
	return out
}

// Known reports whether c is a code of the table ("" is not).
func Known(c Code) bool {
	_, ok := codeTable[c]
	return ok
}

// OutcomeOf is the outcome a step ends with when it fails with code (OK for
// no code): refusals are denied, deadlines time out, missing peers are
// unavailable, everything else is an error.
func OutcomeOf(c Code) Outcome {
	if c == "" {
		return OK
	}
	if info, ok := codeTable[c]; ok {
		return info.outcome
	}
	return Error
}

// ActionFor is what an operator can do about a step that failed with c:
// the evidence, the verdict, the diagram and the UI say it.
func ActionFor(c Code) string { return codeTable[c].action }

// HintFor is what the AI client is told to do about a call that failed
// with c ("" when nothing useful): written for a model, not an operator —
// no commands to run, no configuration to edit; whether to retry.
func HintFor(c Code) string { return codeTable[c].hint }

// SeverityOf is how an audit envelope rates a call that ended with c:
// info for none; else the table's, or warning for a refusal, a timeout or
// a cancel and error for the rest.
func SeverityOf(c Code) string {
	if c == "" {
		return "info"
	}
	if s := codeTable[c].severity; s != "" {
		return s
	}
	switch OutcomeOf(c) {
	case Denied, Timeout, Cancelled:
		return "warning"
	}
	return "error"
}

// RiskOf is the least risk an audit envelope gives a call that ended with c
// (the tool's descriptor may raise it): low unless the table says more.
func RiskOf(c Code) string {
	if r := codeTable[c].risk; r != "" {
		return r
	}
	return "low"
}

// HTTPStatus is the status a request refused with c is answered with: the
// table's, else 403 for a refusal, 504 for a timeout, 503 for a missing
// peer, 500 for the rest.
func HTTPStatus(c Code) int {
	if s := codeTable[c].status; s != 0 {
		return s
	}
	switch OutcomeOf(c) {
	case Denied:
		return http.StatusForbidden
	case Timeout:
		return http.StatusGatewayTimeout
	case Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// retryable reports whether a request refused with c may succeed when sent
// again unchanged (the hub was busy or changing); every other refusal is
// for good.
func retryable(c Code) bool { return codeTable[c].retry }
