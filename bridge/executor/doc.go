// Package executor runs every tool call through one pipeline, each step an
// event of the call's request and operation:
//
//	executor.started           the call and who made it
//	executor.catalog.resolved  the tool exists (else UnknownTool) and the
//	                           arguments fit its schema (else InvalidArguments)
//	policy.decided             capabilities granted, tool not denied, config
//	                           valid (else PolicyDenied / ConfigInvalid)
//	secrets.resolved           every reference resolved and registered with
//	                           the redactor (else SecretUnresolved)
//	approval.requested/decided when required: deny, allow or an operator
//	                           prompt bound to the arguments' hash (else
//	                           ApprovalDenied / ApprovalTimeout)
//	tool.started/completed     the run: timeout, cancellation and panics
//	                           become codes (ToolTimeout, Cancelled, ToolPanic)
//	executor.audit             the envelope: descriptor, decisions, secret
//	                           names and outcomes, summaries, classification
//
// A step that fails ends the call: later steps do not run, and the tool is
// never started. A side-effecting tool runs only once its intent is durable;
// if the log cannot be written it is refused (LogUnavailable). Read-only
// tools follow policy.read_only_without_log.
package executor
