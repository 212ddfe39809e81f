package executor

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// envelope is the audit record of one call, stored as the executor.audit
// event's "envelope" attribute (JSON). It holds names and summaries, never
// secret values.
type envelope struct {
	Tool           string          `json:"tool"`
	RequestID      string          `json:"requestId"`
	OperationID    string          `json:"operationId"`
	User           *identity.User  `json:"user,omitempty"` // who made the call, as the front door authenticated them ([auth])
	Descriptor     *Descriptor     `json:"descriptor,omitempty"`
	Policy         *decision       `json:"policy,omitempty"`
	Secrets        []secretOutcome `json:"secrets,omitempty"`
	Approval       *approvalRecord `json:"approval,omitempty"`
	Args           string          `json:"args"`
	Result         string          `json:"result,omitempty"`
	Outcome        events.Outcome  `json:"outcome"`
	Code           events.Code     `json:"code,omitempty"`
	Action         string          `json:"action,omitempty"` // the code's, from events' one table
	Classification classification  `json:"classification"`
	DurationMs     float64         `json:"durationMs"`
}

type approvalRecord struct {
	Required bool   `json:"required"`
	Mode     string `json:"mode,omitempty"`
	ArgsHash string `json:"argsHash,omitempty"`
	Decision string `json:"decision,omitempty"`
	By       string `json:"by,omitempty"`
	// Decider is who approved, as the UI authenticated them ([auth]).
	Decider *identity.User `json:"decider,omitempty"`
	Reason  string         `json:"reason,omitempty"`
}

type classification struct {
	Category string         `json:"category"`
	Severity string         `json:"severity"` // info | warning | error
	Risk     string         `json:"risk"`     // low | medium | high
	Outcome  events.Outcome `json:"outcome"`
}

func (c *call) audit(res *Result) {
	e := &c.env
	e.Outcome, e.Code, e.Action = events.OutcomeOf(res.Code), res.Code, events.ActionFor(res.Code)
	if u := c.inv.User; !u.IsZero() {
		e.User = &u
	}
	e.DurationMs = events.Ms(c.x.opts.Now().Sub(c.start)) // the injected clock: re-drives are deterministic
	// The code rates the call (events/codes.go); the tool's descriptor can
	// only raise the risk.
	cl := classification{Category: "unknown", Severity: events.SeverityOf(res.Code), Risk: events.RiskOf(res.Code), Outcome: e.Outcome}
	if d := e.Descriptor; d != nil {
		cl.Category = d.Category
		switch {
		case d.SideEffects:
			cl.Risk = riskiest(cl.Risk, "high")
		case len(d.Secrets) > 0 || d.Approval == "always":
			cl.Risk = riskiest(cl.Risk, "medium")
		}
	}
	e.Classification = cl
	b, err := json.Marshal(e)
	if err != nil {
		b = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	c.emit(events.KindExecutorAudit, e.Outcome, res.Code, c.start, events.A("envelope", string(b)))
}

func riskiest(a, b string) string {
	rank := map[string]int{"low": 0, "medium": 1, "high": 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// summarize keeps the first 256 bytes of s, with its size and hash when
// cut: enough to recognise arguments or a result without storing them.
func summarize(s string) string {
	const keep = 256
	if len(s) <= keep {
		return s
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s))
	return fmt.Sprintf("%s…[%d bytes, sha256 %s]", s[:cut], len(s), hex.EncodeToString(sum[:8]))
}
