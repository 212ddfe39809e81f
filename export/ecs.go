package export

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/projections"
)

// ECSVersion is the Elastic Common Schema version an ECS document claims;
// its tests check every document against that version's published field
// definitions (npm @elastic/ecs, export/testdata/ecs).
const ECSVersion = "9.4.0"

// ecsClass is how ECS categorizes one kind of audited event: event.kind,
// event.category and event.type (each type one of the categories'
// expected types).
type ecsClass struct {
	kind     string
	category []string
	// types gives event.type for the line: most depend on its outcome.
	types func(AuditLine) []string
}

func fixed(types ...string) func(AuditLine) []string {
	return func(AuditLine) []string { return types }
}

// allowedOrDenied types a decision: denied when its outcome or its
// decision attribute says so.
func allowedOrDenied(l AuditLine) []string {
	if l.Outcome == events.Denied || l.Attrs[events.AttrDecision] == events.Deny || l.Kind == events.KindProposalRejected {
		return []string{"denied"}
	}
	return []string{"allowed"}
}

// refusedCategory is a refused request's (a foreign Host, Origin or peer);
// one without the token is a failed authentication (ecsClassOf).
var refusedCategory = []string{"web", "intrusion_detection"}

// ecsClasses covers every kind the audit export writes (auditKinds).
var ecsClasses = map[string]ecsClass{
	events.KindExecutorAudit: {"event", []string{"api"}, func(l AuditLine) []string {
		if l.Outcome == events.Denied {
			return []string{"denied"}
		}
		return []string{"access", "allowed"}
	}},
	events.KindMCPHTTPRejected:      {"event", refusedCategory, fixed("access", "denied")},
	events.KindUIRejected:           {"event", refusedCategory, fixed("access", "denied")},
	events.KindStreamRefused:        {"event", []string{"intrusion_detection"}, fixed("denied")},
	events.KindAppendRejected:       {"event", []string{"intrusion_detection"}, fixed("denied")},
	events.KindUpstreamToolPinned:   {"event", []string{"configuration"}, fixed("creation")},
	events.KindUpstreamToolChanged:  {"alert", []string{"configuration", "intrusion_detection"}, fixed("change", "denied")},
	events.KindUpstreamToolRemoved:  {"event", []string{"configuration"}, fixed("deletion")},
	events.KindUpstreamToolAccepted: {"event", []string{"configuration"}, fixed("change")},
	events.KindUpstreamRefused:      {"event", []string{"api", "intrusion_detection"}, fixed("denied")},
	events.KindUpstreamOfferRefused: {"event", []string{"api"}, fixed("denied")},
	events.KindConfigLoaded:         {"event", []string{"configuration"}, fixed("change")},
	events.KindConfigWeakened:       {"alert", []string{"configuration"}, fixed("change")},
	events.KindUpstreamStarted:      {"event", []string{"process"}, fixed("start")},
	events.KindGuardArgs:            {"alert", []string{"intrusion_detection"}, allowedOrDenied},
	events.KindGuardResult:          {"alert", []string{"intrusion_detection"}, allowedOrDenied},
	events.KindUpstreamToolFlagged:  {"alert", []string{"intrusion_detection", "configuration"}, fixed("denied")},
	events.KindApprovalDecided:      {"event", []string{"api"}, allowedOrDenied},
	events.KindProposalApproved:     {"event", []string{"api", "file"}, fixed("allowed")},
	events.KindProposalRejected:     {"event", []string{"api", "file"}, fixed("denied")},
	events.KindArchived:             {"event", []string{"file"}, fixed("creation")},
}

// ecsClassOf is l's categorization: a request refused for want of the
// token is a failed authentication, as SIEM rules on brute force read it.
func ecsClassOf(l AuditLine) (ecsClass, bool) {
	class, ok := ecsClasses[l.Kind]
	if ok && l.Code == events.CodeUnauthenticated && (l.Kind == events.KindMCPHTTPRejected || l.Kind == events.KindUIRejected) {
		class = ecsClass{"event", []string{"authentication", "web"}, fixed("start", "access")}
	}
	return class, ok
}

// ecsRisk is event.risk_score for a call's classified risk: the middle of
// the bands Elastic's detection rules use (low 0–21, medium 22–47, high
// 48–73).
var ecsRisk = map[string]float64{"low": 21, "medium": 47, "high": 73}

// ECS is line as an Elastic Common Schema document: the categorization
// fields a SIEM's rules read (event.kind, category, type, outcome,
// action), who and what it was about (user, source, url, gen_ai.tool,
// file, rule), the chain hash and the covering checkpoint (event.hash,
// labels), and the whole line as event.original, so nothing the native
// format holds is lost.
func ECS(l AuditLine) (map[string]any, error) {
	class, ok := ecsClassOf(l)
	if !ok {
		return nil, fmt.Errorf("seq %d: no ECS categorization for %s", l.Seq, l.Kind)
	}
	original, err := json.Marshal(&l)
	if err != nil {
		return nil, err
	}
	d := doc{}
	d.set("@timestamp", l.Time.UTC().Format(time.RFC3339Nano))
	d.set("ecs.version", ECSVersion)
	d.set("message", message(l))
	d.set("event.kind", class.kind)
	d.set("event.category", class.category)
	d.set("event.type", class.types(l))
	d.set("event.action", l.Kind)
	d.set("event.outcome", ecsOutcome(l.Outcome))
	d.set("event.code", string(l.Code))
	d.set("event.id", l.EventID.String())
	d.set("event.sequence", l.Seq)
	d.set("event.hash", l.Hash)
	d.set("event.dataset", "tracebridge.audit")
	d.set("event.module", "tracebridge")
	d.set("event.original", string(original))
	d.set("observer.vendor", "tracebridge")
	d.set("observer.product", "tracebridge")
	d.set("observer.type", "proxy")
	d.set("error.code", string(l.Code))
	d.set("error.message", l.Attrs["error"])
	if l.DurationMs > 0 {
		d.set("event.duration", int64(l.DurationMs*1e6))
	}
	if l.RequestID != (events.ID{}) {
		d.set("trace.id", events.TraceHex(l.Traceparent, l.RequestID))
	}
	d.set("labels.request_id", idOrEmpty(l.RequestID))
	d.set("labels.session_id", idOrEmpty(l.SessionID))
	d.set("labels.tool", l.Tool)
	if cp := l.Checkpoint; cp != nil {
		d.set("labels.checkpoint_seq", fmt.Sprint(cp.Seq))
		d.set("labels.checkpoint_hash", cp.Hash.String())
	}
	by := l.Attrs[events.AttrBy]
	if member := l.Attrs[events.AttrOriginUser]; member != "" && by != "" {
		// In cluster mode the decider is the member that published the
		// decision (authenticated by the cluster), not the name it claims.
		d.set("labels.claimed_by", by)
		by = member
	}
	d.set("user.name", by)
	d.set("related.user", nonEmpty(by))
	d.set("user.id", l.Attrs["uid"])
	get := func(k string) string { return l.Attrs[k] }
	if decider := identity.FromAttrsAs(identity.DeciderPrefix, get); !decider.IsZero() {
		setUser(d, "user.", decider) // the decider as the UI authenticated them, not a name
	}
	if u := identity.FromAttrs(get); !u.IsZero() {
		if by != "" { // a decision: the decider acted on the requester's call
			setUser(d, "user.target.", u)
		} else {
			setUser(d, "user.", u)
		}
		d.set("related.user", nonEmpty(by, u.Display()))
	}
	d.set("event.reason", l.Attrs[events.AttrReason])
	d.set("labels.server", l.Attrs[events.AttrServer])
	d.set("labels.upstream_tool", l.Attrs[projections.AttrUpTool])
	d.set("labels.approval_id", l.Attrs[events.AttrApprovalID])
	d.set("labels.decision", l.Attrs[events.AttrDecision])
	d.set("labels.proposal", l.Attrs[events.AttrProposal])
	switch l.Kind {
	case events.KindMCPHTTPRejected, events.KindUIRejected:
		d.set("http.request.method", l.Attrs["method"])
		d.set("url.path", l.Attrs[events.AttrPath])
		d.set("url.domain", hostOnly(l.Attrs["host"]))
		d.set("source.address", l.Attrs["remote"])
		d.set("labels.origin", l.Attrs["origin"])
		d.set("labels.count", l.Attrs["count"])
	case events.KindConfigLoaded:
		d.set("file.path", l.Attrs[events.AttrPath])
		d.set("file.hash.sha256", l.Attrs["sha256"])
	case events.KindArchived:
		d.set("file.path", l.Attrs["file"])
		d.set("file.hash.sha256", l.Attrs["sha256"])
	case events.KindUpstreamStarted:
		d.set("process.executable", l.Attrs["executable"])
		d.set("process.hash.sha256", l.Attrs["executableSha256"])
		d.set("process.command_line", l.Attrs["command"])
		if pid, err := strconv.ParseInt(l.Attrs["pid"], 10, 64); err == nil {
			d.set("process.pid", pid)
		}
		d.set("process.user.id", l.Attrs["uid"])
		d.set("labels.sandbox", l.Attrs["sandbox"])
		d.set("labels.sandbox_write", l.Attrs["sandboxWrite"])
		d.set("labels.sandbox_network", l.Attrs["sandboxNetwork"])
		d.set("labels.env_names", l.Attrs["env"])
	case events.KindConfigWeakened:
		d.set("file.path", l.Attrs[events.AttrPath])
		d.set("rule.name", "config-weakened")
		d.set("rule.description", l.Attrs["changes"])
	case events.KindGuardArgs, events.KindGuardResult, events.KindUpstreamToolFlagged:
		// The guard's judgment: which rule of which pack, the action
		// taken, and what triggered it (redacted like every attribute).
		d.set("rule.id", l.Attrs[events.AttrRule])
		d.set("rule.name", l.Attrs[events.AttrRule])
		d.set("rule.ruleset", nonEmptyString(l.Attrs["pack"], "tracebridge/default"))
		d.set("rule.category", "guard")
		d.set("labels.guard_action", nonEmptyString(l.Attrs["action"], "block"))
		d.set("labels.trigger", l.Attrs["trigger"])
		d.set("labels.findings", nonEmptyString(l.Attrs["findings"], l.Attrs[projections.AttrFindings]))
	case events.KindPolicyDecided:
		d.set("rule.name", l.Attrs[events.AttrRule])
		d.set("rule.version", l.Attrs[events.AttrPolicyVersion])
	}
	hashes := nonEmpty(l.Hash, l.Attrs[events.AttrArgsHash], l.Attrs[projections.AttrHash], l.Attrs["sha256"])
	if l.Kind == events.KindExecutorAudit {
		hashes = append(hashes, envelopeFields(d, l.Envelope)...)
	}
	d.set("related.hash", hashes)
	return d, nil
}

// envelopeFields sets what a tool call's envelope says (the tool, its
// server, the policy's reason, who approved it, its risk) and returns the
// hashes it names.
func envelopeFields(d doc, raw json.RawMessage) []string {
	var env struct {
		Descriptor struct {
			Name   string `json:"name"`
			Source string `json:"source"`
		} `json:"descriptor"`
		Policy struct {
			Reason string `json:"reason"`
		} `json:"policy"`
		Approval struct {
			ArgsHash string `json:"argsHash"`
			By       string `json:"by"`
		} `json:"approval"`
		Classification struct {
			Risk string `json:"risk"`
		} `json:"classification"`
		User       *identity.User `json:"user"`
		DurationMs float64        `json:"durationMs"`
	}
	if json.Unmarshal(raw, &env) != nil {
		return nil
	}
	d.set("gen_ai.operation.name", "execute_tool")
	d.set("gen_ai.tool.name", env.Descriptor.Name)
	if server, ok := strings.CutPrefix(env.Descriptor.Source, "upstream:"); ok {
		d.set("labels.server", server)
	}
	d.set("rule.name", env.Policy.Reason)
	if env.User != nil && !env.User.IsZero() { // who made the call; the approver is a label
		setUser(d, "user.", *env.User)
		d.set("labels.approved_by", env.Approval.By)
		d.set("related.user", nonEmpty(env.User.Display(), env.Approval.By))
	} else {
		d.set("user.name", env.Approval.By)
		d.set("related.user", nonEmpty(env.Approval.By))
	}
	if r, ok := ecsRisk[env.Classification.Risk]; ok {
		d.set("event.risk_score", r)
	}
	if env.DurationMs > 0 {
		d.set("event.duration", int64(env.DurationMs*1e6))
	}
	return nonEmpty(env.Approval.ArgsHash)
}

// setUser sets the ECS user fields under prefix ("user." or
// "user.target.") for an authenticated user: its subject, name, email, and
// groups as roles; the OAuth client as a label.
func setUser(d doc, prefix string, u identity.User) {
	d.set(prefix+"id", u.Subject)
	d.set(prefix+"name", u.Display())
	d.set(prefix+"email", u.Email)
	d.set(prefix+"roles", u.Groups)
	d.set("labels.client_id", u.ClientID)
}

// message is the line in a sentence: what happened to what, and its code.
func message(l AuditLine) string {
	subject := l.Tool
	for _, k := range []string{projections.AttrExposed, events.AttrTool, projections.AttrUpTool, events.AttrProposal, events.AttrPath, "file"} {
		if subject == "" {
			subject = l.Attrs[k]
		}
	}
	if m := l.Attrs["method"]; m != "" {
		subject = m + " " + subject
	}
	s := l.Kind
	if subject != "" {
		s += " " + subject
	}
	s += ": " + string(l.Outcome)
	if l.Code != "" {
		s += " (" + string(l.Code) + ")"
	}
	return s
}

func ecsOutcome(o events.Outcome) string {
	switch o {
	case events.OK:
		return "success"
	case events.Pending, "":
		return "unknown"
	}
	return "failure"
}

func idOrEmpty(id events.ID) string {
	if id == (events.ID{}) {
		return ""
	}
	return id.String()
}

func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return hostport
}

func nonEmpty(vs ...string) []string {
	var out []string
	for _, v := range vs {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

// doc is an ECS document being built: set puts a dotted field in its
// nested object, and leaves out what is empty.
type doc map[string]any

func (d doc) set(field string, v any) {
	switch x := v.(type) {
	case string:
		if x == "" {
			return
		}
	case []string:
		if len(x) == 0 {
			return
		}
	}
	m := map[string]any(d)
	parts := strings.Split(field, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := m[p].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[p] = next
		}
		m = next
	}
	m[parts[len(parts)-1]] = v
}

// nonEmptyString is s, or else when s is empty.
func nonEmptyString(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return s
}
