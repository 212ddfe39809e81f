package events

import "sort"

// Boundary is the layer an event crosses.
type Boundary string

const (
	BoundaryMCP      Boundary = "mcp"
	BoundaryExecutor Boundary = "executor"
	BoundaryPolicy   Boundary = "policy"
	BoundarySecrets  Boundary = "secrets"
	BoundaryApproval Boundary = "approval"
	BoundaryTool     Boundary = "tool"
	BoundaryPipe     Boundary = "pipe"
	BoundaryHost     Boundary = "host"
	BoundaryEditor   Boundary = "editor"
	BoundaryLSP      Boundary = "lsp"
	BoundaryProposal Boundary = "proposal"
	BoundaryReview   Boundary = "review"
	BoundaryOperator Boundary = "operator"
	BoundaryLog      Boundary = "log"
	BoundaryUI       Boundary = "ui"
	BoundaryUpstream Boundary = "upstream"
)

// Participants of sequence diagrams, in their canonical order.
const (
	Client   = "Client"
	Bridge   = "Bridge"
	Executor = "Executor"
	Policy   = "Policy"
	Secrets  = "Secrets"
	Approval = "Approval"
	Tool     = "Tool"
	Upstream = "Upstream" // drawn as one participant per server (the event's server attribute)
	Pipe     = "Pipe"
	Host     = "Host"
	Editor   = "Editor" // an editor attached to the host (docs/pipe-protocol.md, "Editors")
	LSP      = "LSP"    // a language server the host drives
	Operator = "Operator"
	Hub      = "Hub"
	UI       = "UI"
)

// Participants lists the diagram participants in canonical order.
var Participants = []string{Client, Bridge, Executor, Policy, Secrets, Approval, Tool, Upstream, Pipe, Host, Editor, LSP, Operator, UI, Hub}

// KindInfo describes one kind of event. Diagrams, verdicts and projections
// read it instead of matching kind strings.
type KindInfo struct {
	Kind     string
	Boundary Boundary
	From, To string
	// EndsStep is true when the kind closes a step that an earlier kind
	// opened (a response, a decision, a completion).
	EndsStep bool
	// ClosedBy lists the kinds that close the step this kind opens; empty
	// for kinds that open nothing a run must finish. Verdicts use it as the
	// expected chain: a step opened and never closed is a missing step.
	ClosedBy []string
}

// The catalog. Later issues add the kinds of their boundaries here, and only
// here.
var catalog = map[string]KindInfo{}

func kind(k string, b Boundary, from, to string, ends bool) {
	if _, dup := catalog[k]; dup {
		panic("events: duplicate kind " + k)
	}
	catalog[k] = KindInfo{Kind: k, Boundary: b, From: from, To: to, EndsStep: ends}
}

// Kinds of the MCP boundary.
const (
	KindMCPSessionStarted       = "mcp.session.started"
	KindMCPSessionEnded         = "mcp.session.ended"
	KindMCPSessionAborted       = "mcp.session.aborted"
	KindMCPRequestReceived      = "mcp.request.received"
	KindMCPResponseSent         = "mcp.response.sent"
	KindMCPNotificationReceived = "mcp.notification.received"
	KindMCPHTTPRejected         = "mcp.http.rejected"  // the HTTP front door refused a request (token, Host, Origin, size)
	KindMCPStreamResumed        = "mcp.stream.resumed" // a client came back for a call's stream with Last-Event-ID (SEP-1699)
	KindMCPRootsListed          = "mcp.roots.listed"   // the bridge asked the client for its roots (they choose the workspace host)
)

// Kinds of the executor and the steps it drives.
const (
	KindExecutorStarted   = "executor.started"
	KindExecutorCatalog   = "executor.catalog.resolved"
	KindExecutorAudit     = "executor.audit"
	KindToolsDiscovered   = "executor.tools.discovered"
	KindConfigLoaded      = "policy.config.loaded" // the bridge put a changed tracebridge.toml in force
	KindPolicyDecided     = "policy.decided"
	KindConfigWeakened    = "policy.config.weakened" // a reload loosened approval, removed a deny, a rule or a guard rule, or widened a grant (the difference)
	KindGuardArgs         = "guard.args.judged"      // the guard's pack found something in a call's arguments (rule, action, trigger)
	KindGuardResult       = "guard.result.judged"    // the guard found something in a result before the client read it (redacted, flagged or blocked)
	KindSecretsResolved   = "secrets.resolved"
	KindApprovalRequested = "approval.requested"
	KindApprovalDecided   = "approval.decided"
	KindApprovalRefused   = "approval.refused" // an approval from someone who may not give it ([approval] deciders, four_eyes): the call is denied
	KindToolStarted       = "tool.started"
	KindToolCompleted     = "tool.completed"
)

// Kinds of the pipe and host.
const (
	KindPipeAttempt          = "pipe.attempt"
	KindPipeConnected        = "pipe.connected"
	KindPipeUnavailable      = "pipe.unavailable"
	KindPipeRequestSent      = "pipe.request.sent"
	KindPipeResponseReceived = "pipe.response.received"
	KindPipeTimeout          = "pipe.timeout"
	KindHostReceived         = "host.request.received"
	KindHostDispatched       = "host.dispatched"
	KindHostResponseSent     = "host.response.sent"
)

// Kinds of the language-server boundary: the host starts a language server
// per language and root on demand (host/lsp); every request to it and
// its answer is recorded under the tool call's request id.
const (
	KindLSPStarted  = "lsp.started"
	KindLSPExited   = "lsp.exited" // with LanguageServerFailed when it was not asked to stop
	KindLSPRequest  = "lsp.request.sent"
	KindLSPResponse = "lsp.response.received" // its result, or why there was none
	KindLSPNotified = "lsp.notification.sent" // a document opened or changed
)

// Kinds of the editor boundary: an editor attached to a workspace host
// feeds it (its requests are host.request.received like any other) and is
// asked by it (to apply an approved edit to an unsaved buffer).
const (
	KindEditorAttached         = "editor.attached"
	KindEditorDetached         = "editor.detached"
	KindEditorRequestSent      = "editor.request.sent"      // the host asked the editor (command, path)
	KindEditorResponseReceived = "editor.response.received" // its answer, or why there was none (PipeTimeout, PipeUnavailable)
)

// Kinds of the upstream boundary: the MCP servers the gateway starts or
// dials (attribute server names which), their tool descriptors as pinned
// by hash, and every request the bridge sends them.
const (
	KindUpstreamStarted      = "upstream.started"   // a stdio upstream's process started
	KindUpstreamExited       = "upstream.exited"    // it exited (exit code, the last stderr lines)
	KindUpstreamConnected    = "upstream.connected" // the MCP handshake completed
	KindUpstreamUnavailable  = "upstream.unavailable"
	KindUpstreamRequestSent  = "upstream.request.sent"
	KindUpstreamRefused      = "upstream.request.refused" // not sent: the tool as listed on the carrying session is not the pinned one
	KindUpstreamResponse     = "upstream.response.received"
	KindUpstreamNotification = "upstream.notification.received"
	KindUpstreamResumed      = "upstream.stream.resumed" // the server ended a call's event stream before answering: the bridge came back for the answer (Last-Event-ID)
	KindUpstreamCancelled    = "upstream.cancelled"
	KindUpstreamTimeout      = "upstream.timeout"
	KindUpstreamToolPinned   = "upstream.tool.pinned"     // first sight of a tool: its descriptor's hash
	KindUpstreamToolChanged  = "upstream.tool.changed"    // a pinned tool's descriptor changed: refused until accepted
	KindUpstreamToolRemoved  = "upstream.tool.removed"    // a pinned tool is no longer listed
	KindUpstreamToolAccepted = "upstream.tool.accepted"   // an operator accepted a changed descriptor
	KindUpstreamToolFlagged  = "upstream.tool.flagged"    // first sight of a tool the guard flagged (or [gateway] first_sight = "review"): held until accepted
	KindUpstreamOfferRefused = "upstream.offer.refused"   // a resource or template not served: it collides with the bridge's own or another server's
	KindUpstreamOffers       = "upstream.offers.listed"   // what the server offers besides tools, as it listed them: prompts, resources, templates
	KindUpstreamAsked        = "upstream.client.asked"    // the upstream sent the client a request (sampling, elicitation, roots), relayed to its client session
	KindUpstreamAnswered     = "upstream.client.answered" // the client's answer to it, relayed back (or why there was none)
)

// Kinds of proposals, reviews and operator actions.
const (
	KindProposalCreated  = "proposal.created"
	KindProposalApproved = "proposal.approved"
	KindProposalApplying = "proposal.applying"
	KindProposalRejected = "proposal.rejected"
	KindProposalApplied  = "proposal.applied"
	KindProposalFailed   = "proposal.failed"
	KindProposalReset    = "proposal.reset"
	KindProposalDeferred = "proposal.deferred" // an operator skipped deciding; the proposal stays pending
	KindReviewPresented  = "review.presented"
	KindReviewCommitted  = "review.committed" // an operator committed the applied changes with the review as the message
	KindOperatorAction   = "operator.action"
)

// Kinds of the operator UI: it records its start and every request it
// refused (foreign Host, no token, foreign Origin, bad CSRF token, a
// state change by GET, a decision on content that changed).
const (
	KindUIStarted  = "ui.started"
	KindUIRejected = "ui.request.rejected"
	KindUISignedIn = "ui.signed.in" // a person the [auth] issuer authenticated signed in to the UI (user.*, role)
	KindUIDecided  = "ui.decision.made"
)

// Kinds of the log itself: the hub records its own life and what it refused.
const (
	KindHubStarted       = "log.hub.started"
	KindHubStopped       = "log.hub.stopped"
	KindAppendRejected   = "log.append.rejected"
	KindCheckpointSigned = "log.checkpoint.signed"
	KindCheckpointFailed = "log.checkpoint.failed" // checkpoint.json could not be written; the last one stands
	KindArchived         = "log.archived"          // events moved into a sealed archive segment; the log starts after them
	KindJournalRepaired  = "log.journal.repaired"  // a damaged journal was set aside: what was applied, where it is kept, from which seq events were lost
	KindStreamRefused    = "log.stream.refused"    // a collector did not store a stream message: not an event, or not from where it claims
	KindStreamGap        = "log.stream.gap"        // a collector found stream messages gone (deleted, purged) before it stored them
	KindExportIdle       = "log.export.idle"       // a process's [otlp] exports nothing: it does not hold the hub, or its exporter cannot be built
)

func init() {
	kind(KindMCPSessionStarted, BoundaryMCP, Client, Bridge, false)
	kind(KindMCPSessionEnded, BoundaryMCP, Client, Bridge, true)
	kind(KindMCPSessionAborted, BoundaryMCP, Client, Bridge, true)
	kind(KindMCPRequestReceived, BoundaryMCP, Client, Bridge, false)
	kind(KindMCPResponseSent, BoundaryMCP, Bridge, Client, true)
	kind(KindMCPNotificationReceived, BoundaryMCP, Client, Bridge, true)
	kind(KindMCPHTTPRejected, BoundaryMCP, Client, Bridge, true)
	kind(KindMCPStreamResumed, BoundaryMCP, Client, Bridge, false)
	kind(KindMCPRootsListed, BoundaryMCP, Bridge, Client, true)

	kind(KindExecutorStarted, BoundaryExecutor, Bridge, Executor, false)
	kind(KindExecutorCatalog, BoundaryExecutor, Executor, Executor, true)
	kind(KindExecutorAudit, BoundaryExecutor, Executor, Bridge, true)
	kind(KindToolsDiscovered, BoundaryExecutor, Bridge, Executor, true)
	kind(KindConfigLoaded, BoundaryPolicy, Bridge, Policy, true)
	kind(KindPolicyDecided, BoundaryPolicy, Executor, Policy, true)
	kind(KindConfigWeakened, BoundaryPolicy, Bridge, Policy, true)
	kind(KindGuardArgs, BoundaryPolicy, Executor, Policy, true)
	kind(KindGuardResult, BoundaryPolicy, Tool, Policy, true)
	kind(KindSecretsResolved, BoundarySecrets, Executor, Secrets, true)
	kind(KindApprovalRequested, BoundaryApproval, Executor, Approval, false)
	kind(KindApprovalDecided, BoundaryApproval, Operator, Approval, true)
	kind(KindApprovalRefused, BoundaryApproval, Approval, Executor, true)
	kind(KindToolStarted, BoundaryTool, Executor, Tool, false)
	kind(KindToolCompleted, BoundaryTool, Tool, Executor, true)

	kind(KindPipeAttempt, BoundaryPipe, Executor, Pipe, false)
	kind(KindPipeConnected, BoundaryPipe, Pipe, Host, true)
	kind(KindPipeUnavailable, BoundaryPipe, Pipe, Executor, true)
	kind(KindPipeRequestSent, BoundaryPipe, Pipe, Host, false)
	kind(KindPipeResponseReceived, BoundaryPipe, Host, Pipe, true)
	kind(KindPipeTimeout, BoundaryPipe, Pipe, Executor, true)
	kind(KindHostReceived, BoundaryHost, Pipe, Host, false)
	kind(KindHostDispatched, BoundaryHost, Host, Host, false)
	kind(KindHostResponseSent, BoundaryHost, Host, Pipe, true)
	kind(KindLSPStarted, BoundaryLSP, Host, LSP, false)
	kind(KindLSPExited, BoundaryLSP, LSP, Host, false)
	kind(KindLSPRequest, BoundaryLSP, Host, LSP, false)
	kind(KindLSPResponse, BoundaryLSP, LSP, Host, true)
	kind(KindLSPNotified, BoundaryLSP, Host, LSP, false)
	kind(KindEditorAttached, BoundaryEditor, Editor, Host, false)
	kind(KindEditorDetached, BoundaryEditor, Editor, Host, false)
	kind(KindEditorRequestSent, BoundaryEditor, Host, Editor, false)
	kind(KindEditorResponseReceived, BoundaryEditor, Editor, Host, true)

	kind(KindUpstreamStarted, BoundaryUpstream, Bridge, Upstream, false)
	kind(KindUpstreamExited, BoundaryUpstream, Upstream, Bridge, true)
	kind(KindUpstreamConnected, BoundaryUpstream, Upstream, Bridge, true)
	kind(KindUpstreamUnavailable, BoundaryUpstream, Upstream, Tool, true)
	kind(KindUpstreamRequestSent, BoundaryUpstream, Tool, Upstream, false)
	kind(KindUpstreamRefused, BoundaryUpstream, Tool, Upstream, true)
	kind(KindUpstreamResponse, BoundaryUpstream, Upstream, Tool, true)
	kind(KindUpstreamNotification, BoundaryUpstream, Upstream, Tool, true)
	kind(KindUpstreamResumed, BoundaryUpstream, Tool, Upstream, false)
	kind(KindUpstreamCancelled, BoundaryUpstream, Tool, Upstream, true)
	kind(KindUpstreamTimeout, BoundaryUpstream, Upstream, Tool, true)
	kind(KindUpstreamToolPinned, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamToolChanged, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamToolRemoved, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamToolAccepted, BoundaryUpstream, Operator, Executor, true)
	kind(KindUpstreamToolFlagged, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamOfferRefused, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamOffers, BoundaryUpstream, Upstream, Executor, true)
	kind(KindUpstreamAsked, BoundaryUpstream, Upstream, Client, false)
	kind(KindUpstreamAnswered, BoundaryUpstream, Client, Upstream, true)

	kind(KindProposalCreated, BoundaryProposal, Host, Operator, false)
	kind(KindProposalApproved, BoundaryProposal, Operator, Host, true)
	kind(KindProposalApplying, BoundaryProposal, Host, Host, false)
	kind(KindProposalRejected, BoundaryProposal, Operator, Host, true)
	kind(KindProposalApplied, BoundaryProposal, Host, Host, true)
	kind(KindProposalFailed, BoundaryProposal, Host, Host, true)
	kind(KindProposalReset, BoundaryProposal, Operator, Host, true)
	kind(KindProposalDeferred, BoundaryProposal, Operator, Host, false)
	kind(KindReviewPresented, BoundaryReview, Host, Operator, true)
	kind(KindReviewCommitted, BoundaryReview, Operator, Host, true)
	kind(KindOperatorAction, BoundaryOperator, Operator, Hub, true)

	kind(KindUIStarted, BoundaryUI, UI, UI, true)
	kind(KindUIRejected, BoundaryUI, Operator, UI, true)
	kind(KindUISignedIn, BoundaryUI, Operator, UI, true)
	kind(KindUIDecided, BoundaryUI, Operator, UI, true)

	kind(KindHubStarted, BoundaryLog, Hub, Hub, false)
	kind(KindHubStopped, BoundaryLog, Hub, Hub, true)
	kind(KindAppendRejected, BoundaryLog, Hub, Hub, true)
	kind(KindCheckpointSigned, BoundaryLog, Hub, Hub, true)
	kind(KindCheckpointFailed, BoundaryLog, Hub, Hub, true)
	kind(KindArchived, BoundaryLog, Hub, Hub, true)
	kind(KindJournalRepaired, BoundaryLog, Operator, Hub, true)
	kind(KindStreamRefused, BoundaryLog, Hub, Hub, true)
	kind(KindStreamGap, BoundaryLog, Hub, Hub, true)
	kind(KindExportIdle, BoundaryLog, Hub, Hub, true)
}

// opens declares that k opens a step one of closers must close.
func opens(k string, closers ...string) {
	info := catalog[k]
	info.ClosedBy = closers
	catalog[k] = info
}

// The expected chain: every step a run opens must be closed by one of these.
func init() {
	opens(KindMCPRequestReceived, KindMCPResponseSent, KindMCPSessionEnded, KindMCPSessionAborted)
	opens(KindExecutorStarted, KindExecutorAudit)
	opens(KindApprovalRequested, KindApprovalDecided)
	opens(KindToolStarted, KindToolCompleted)
	opens(KindPipeAttempt, KindPipeConnected, KindPipeUnavailable)
	opens(KindPipeRequestSent, KindPipeResponseReceived, KindPipeTimeout, KindPipeUnavailable)
	opens(KindHostReceived, KindHostResponseSent)
	opens(KindEditorRequestSent, KindEditorResponseReceived)
	opens(KindLSPRequest, KindLSPResponse)
	opens(KindUpstreamRequestSent, KindUpstreamResponse, KindUpstreamTimeout, KindUpstreamCancelled, KindUpstreamUnavailable)
	opens(KindProposalApplying, KindProposalApplied, KindProposalFailed)
}

// Lookup returns the catalog entry of a kind.
func Lookup(kind string) (KindInfo, bool) {
	k, ok := catalog[kind]
	return k, ok
}

// Kinds returns every catalogued kind, sorted.
func Kinds() []KindInfo {
	out := make([]KindInfo, 0, len(catalog))
	for _, k := range catalog {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}
