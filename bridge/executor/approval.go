package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Attributes of approval events, shared with `tracebridge approvals`.
const (
	AttrApprovalID = "approvalId" // the operation id of the call waiting
	AttrArgsHash   = "argsHash"   // SHA-256 of the canonical arguments
	AttrDecision   = "decision"   // approve | deny
	AttrDeadline   = "deadline"   // RFC 3339; no decision by then is a denial
	AttrTool       = "tool"
	AttrReason     = "reason"
)

// Decisions.
const (
	Approve = "approve"
	Deny    = "deny"
)

// RequestReader reads one request's events back from the log: how the
// executor sees an operator's decision, whichever process wrote it.
type RequestReader interface {
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
}

// ArgsHash is the hash an approval is bound to: SHA-256 of the arguments
// re-encoded canonically (sorted keys), so whitespace or key order cannot
// make approved arguments look different.
func ArgsHash(args json.RawMessage) string {
	var v any
	canon := []byte("null")
	if len(args) > 0 && json.Unmarshal(args, &v) == nil {
		canon, _ = json.Marshal(v)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// awaitDecision polls the request's events for an approval.decided naming
// approvalID until deadline. It returns the decision event, or ok=false on
// timeout.
func awaitDecision(ctx context.Context, log RequestReader, req, approvalID events.ID, deadline time.Time, every time.Duration) (events.Event, bool, error) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		evs, err := log.ByRequest(ctx, req)
		if err == nil {
			for _, e := range evs {
				if e.Kind == events.KindApprovalDecided && e.Attrs[AttrApprovalID] == approvalID.String() {
					return e, true, nil
				}
			}
		}
		wait := time.Until(deadline)
		if wait <= 0 {
			return events.Event{}, false, nil
		}
		select {
		case <-ctx.Done():
			return events.Event{}, false, ctx.Err()
		case <-t.C:
		case <-time.After(wait):
		}
	}
}
