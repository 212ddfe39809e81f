package mcp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
)

// A call refused before anything ran (unknown tool, arguments that fail
// the schema, a policy denial) costs its sender nothing, so what it sends
// must not cost the log much either: its params are recorded whole up to
// refusedKeep bytes, and only while the session's refused calls stayed
// within refusedBudget; past either, a digest (size, sha256, the first
// bytes) stands in for the arguments. A re-drive sends the digest: the
// tool name is kept, so an unknown tool is refused the same way.
const (
	refusedKeep   = 4 << 10
	refusedBudget = 256 << 10
	refusedHead   = 256
)

// refusedBeforeRun says whether code ends a call before any run.
func refusedBeforeRun(code events.Code) bool {
	switch code {
	case events.CodeUnknownTool, events.CodeInvalidArguments, events.CodePolicyDenied, events.CodePolicyRuleFailed, events.CodeConfigInvalid:
		return true
	}
	return false
}

// refusedParams is what is recorded of a refused call's params, given the
// bytes this session's refused calls recorded whole so far; whole tells
// whether they count against the budget.
func refusedParams(params string, tool string, spent int) (recorded string, whole bool) {
	if len(params) <= refusedKeep && spent+len(params) <= refusedBudget {
		return params, true
	}
	sum := sha256.Sum256([]byte(params))
	head := params[:min(len(params), refusedHead)]
	for len(head) > 0 && !utf8.ValidString(head) {
		head = head[:len(head)-1]
	}
	b, _ := json.Marshal(map[string]any{"name": tool, "arguments": map[string]any{"tracebridge/refused": map[string]any{
		"bytes": len(params), "sha256": hex.EncodeToString(sum[:]), "head": head}}})
	return string(b), false
}
