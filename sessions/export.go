package sessions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
)

// ExportInput is what a session export reads from the log.
type ExportInput struct {
	Name    string
	Session events.ID
	// Runs are the events of every request of the session and of every
	// operator request that decided one of its proposals, each run in seq
	// order; Notifications are the session's events without a request.
	Runs          [][]events.Event
	Notifications []events.Event
	// Config is the configuration to re-drive with when the operator names
	// one; "" takes the one the bridge recorded when the session started,
	// else TodayConfig (a log older than that record).
	Config      string
	TodayConfig string
	Version     string
	// Pins are the pinned descriptors of upstream tools (the pins view):
	// the session file keeps those of the servers it called.
	Pins []projections.Pin
	// Offers are what each upstream last listed besides tools (the offers
	// view), whole.
	Offers []projections.Offers
}

// Export turns a session's evidence into a session file: the client's
// requests in order, the operator's pipe commands between them, the host's
// answers, and the crossings each left.
func Export(in ExportInput) (*Session, error) {
	s := &Session{Header: SessionHeader{Name: in.Name, SessionID: in.Session, Config: in.Config, Tracebridge: in.Version}}
	if s.Header.Config == "" {
		cfg, redacted, err := recordedConfig(in)
		if err != nil {
			return nil, err
		}
		s.Header.Config, s.Header.Redacted = cfg, redacted
	}
	for _, it := range inOrder(in) {
		if err := exportItem(s, it); err != nil {
			return nil, err
		}
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("session %s left no requests to export", in.Session)
	}
	for _, server := range sessionServers(s) {
		if err := exportUpstream(s, in, server); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// item is a run or a notification of the session, at its seq.
type item struct {
	seq  uint64
	run  []events.Event
	note *events.Event
}

// inOrder is the session's runs and client notifications in seq order.
func inOrder(in ExportInput) []item {
	var items []item
	for _, r := range in.Runs {
		if len(r) > 0 {
			items = append(items, item{seq: r[0].Seq, run: r})
		}
	}
	for i := range in.Notifications {
		if in.Notifications[i].Kind == events.KindMCPNotificationReceived {
			items = append(items, item{seq: in.Notifications[i].Seq, note: &in.Notifications[i]})
		}
	}
	sort.Slice(items, func(i, j int) bool { return items[i].seq < items[j].seq })
	return items
}

// recordedConfig is the configuration the bridge recorded when the session
// started, not today's (today's only for a log older than that record).
// One with redacted values (a credential in a server's argv) is exported as
// recorded, the markers in place, and says so (redacted): a re-drive runs
// no server, so nothing needs the value. One cut, or whose redaction broke
// it, cannot be.
func recordedConfig(in ExportInput) (cfg string, redacted bool, err error) {
	cfg, recorded := in.TodayConfig, false
	for i := range in.Notifications {
		if e := &in.Notifications[i]; e.Kind == events.KindMCPSessionStarted {
			cfg, recorded = e.Attrs.Lookup("config")
		}
	}
	if !recorded {
		cfg = in.TodayConfig
	}
	if strings.Contains(cfg, "[TRUNCATED") || strings.Contains(cfg, "[PAYLOAD:") {
		return "", false, fmt.Errorf("session %s: the recorded configuration was cut in the log; export with --config FILE", in.Session)
	}
	if !strings.Contains(cfg, "[REDACTED") {
		return cfg, false, nil
	}
	if _, err := config.Parse("tracebridge.toml", []byte(cfg)); err != nil {
		return "", false, fmt.Errorf("session %s: the recorded configuration holds redacted values and no longer parses (%v); export with --config FILE", in.Session, err)
	}
	return cfg, true, nil
}

// exportItem adds a notification's step, or a run's steps.
func exportItem(s *Session, it item) error {
	if it.note != nil {
		st := Step{Step: StepNotify, Method: it.note.Attrs.Get(events.AttrMethod)}
		if p := it.note.Attrs.Get(events.AttrParams); p != "" {
			if !json.Valid([]byte(p)) {
				return fmt.Errorf("seq %d: the notification's params were cut or redacted into invalid JSON; it cannot be re-sent", it.note.Seq)
			}
			st.Params = json.RawMessage(p)
		}
		s.Steps = append(s.Steps, st)
		return nil
	}
	if s.Header.Recorded.IsZero() {
		s.Header.Recorded = it.run[0].Time.UTC()
	}
	steps, err := exportRun(s, it.run)
	if err != nil {
		return err
	}
	s.Steps = append(s.Steps, steps...)
	return nil
}

// sessionServers are the upstream servers the recording serves: every one
// of the session's configuration, called or not (one listed but never
// called must not be unavailable in the re-drive), and every one called.
func sessionServers(s *Session) []string {
	var servers []string
	if cfg, err := config.Parse("session config", []byte(s.Header.Config)); err == nil {
		for name := range cfg.Servers {
			servers = append(servers, name)
		}
	}
	for _, st := range s.Steps {
		if st.Step == StepUpstream {
			servers = append(servers, st.Server)
		}
	}
	return servers
}

// exportUpstream puts what server offered (its listings besides tools) and
// its pinned tools in the header, once.
func exportUpstream(s *Session, in ExportInput, server string) error {
	if s.Header.Upstreams[server] != nil {
		return nil
	}
	if s.Header.Upstreams == nil {
		s.Header.Upstreams = map[string][]json.RawMessage{}
	}
	s.Header.Upstreams[server] = []json.RawMessage{}
	for _, o := range in.Offers {
		if o.Server != server {
			continue
		}
		uo, err := offersOf(o)
		if err != nil {
			return err
		}
		if s.Header.Offers == nil {
			s.Header.Offers = map[string]UpstreamOffers{}
		}
		s.Header.Offers[server] = uo
	}
	for _, p := range in.Pins {
		if p.Server != server || p.State == projections.PinRemoved {
			continue
		}
		if !json.Valid([]byte(p.Descriptor)) {
			return fmt.Errorf("the pinned descriptor of %s is not whole JSON in the log; the session cannot serve it", p.Name)
		}
		s.Header.Upstreams[server] = append(s.Header.Upstreams[server], json.RawMessage(p.Descriptor))
	}
	return nil
}

// offersOf is what an upstream listed besides tools, as the session file
// keeps it.
func offersOf(o projections.Offers) (UpstreamOffers, error) {
	var uo UpstreamOffers
	for _, f := range []struct {
		v  string
		to *json.RawMessage
	}{{o.Prompts, &uo.Prompts}, {o.Resources, &uo.Resources}, {o.Templates, &uo.Templates}} {
		if f.v == "" {
			continue
		}
		if !json.Valid([]byte(f.v)) {
			return uo, fmt.Errorf("what %s listed besides tools is not whole JSON in the log; the session cannot list it", o.Server)
		}
		*f.to = json.RawMessage(f.v)
	}
	return uo, nil
}

// exportRun returns the step of one request and the host answers it got.
func exportRun(s *Session, run []events.Event) ([]Step, error) {
	x := &runExport{s: s}
	for i := range run {
		e := &run[i]
		if inScopeEvent(e) {
			x.expect = append(x.expect, crossingOf(e))
		}
		if err := x.add(e); err != nil {
			return nil, err
		}
	}
	if x.lead == nil {
		return nil, nil // host- or operator-side events of no request the session re-drives
	}
	if x.lead.Step == StepClient && !x.answered {
		return nil, fmt.Errorf("request %s (%s) was never answered (the bridge stopped mid-request), so the session cannot be re-driven past it", run[0].RequestID, x.lead.Method)
	}
	x.lead.Expect = x.expect
	return append([]Step{*x.lead}, x.hosts...), nil
}

// runExport folds one run's events, in order, into the step that re-drives
// it (lead: the client's request, or an operator's) and the answers the
// recording gives again (hosts: host, tool and upstream answers).
type runExport struct {
	s        *Session
	lead     *Step
	hosts    []Step
	asks     []Ask // of the upstream call in flight
	expect   []Crossing
	answered bool
}

func (x *runExport) add(e *events.Event) error {
	switch e.Kind {
	case events.KindMCPRequestReceived:
		x.request(e)
	case events.KindMCPResponseSent:
		return x.response(e)
	case events.KindMCPRootsListed:
		return x.roots(e)
	case events.KindPipeAttempt:
		if x.s.Header.Pipe == "" {
			x.s.Header.Pipe = e.Attrs.Get(events.AttrPath)
		}
	case events.KindPipeRequestSent:
		return x.operator(e)
	case events.KindApprovalDecided:
		x.decision(e)
	case events.KindToolCompleted:
		return x.tool(e)
	case events.KindExecutorAudit:
		x.audited(e)
	case events.KindUpstreamResponse:
		return x.upstream(e)
	case events.KindUpstreamAsked:
		return x.asked(e)
	case events.KindUpstreamAnswered:
		x.answeredAsk(e)
	case events.KindPipeResponseReceived:
		return x.host(e)
	}
	return nil
}

// request starts a client step (the first request of the run leads it).
func (x *runExport) request(e *events.Event) {
	if x.lead != nil {
		return
	}
	x.lead = &Step{Step: StepClient, Method: e.Attrs.Get(events.AttrMethod), RequestID: e.RequestID}
	if u := identity.FromAttrs(e.Attrs.Get); !u.IsZero() && x.s.Header.User == nil {
		x.s.Header.User = &u
	}
	if e.Attrs.Get(events.AttrMethod) == "initialize" {
		x.s.Header.Client, x.s.Header.ProtocolVersion = e.Attrs.Get(events.AttrClient), e.Attrs.Get("protocolVersion")
	}
}

// response gives the client step its params (recorded with the response)
// and the answer the client got.
func (x *runExport) response(e *events.Event) error {
	if x.lead == nil || x.lead.Step != StepClient || x.lead.Params != nil {
		return nil
	}
	if p := e.Attrs.Get(events.AttrParams); p != "" {
		if !json.Valid([]byte(p)) || strings.Contains(p, "[TRUNCATED") {
			return fmt.Errorf("request %s (seq %d): its params were cut in the log (over 4 KiB) and cannot be re-sent", e.RequestID, e.Seq)
		}
		x.lead.Params = json.RawMessage(p)
	}
	if a := e.Attrs.Get(events.AttrAnswer); json.Valid([]byte(a)) {
		x.lead.Reply = json.RawMessage(a) // cut (a log without a payload store): not compared
	}
	x.answered = true
	return nil
}

// roots keeps what the client answered when the bridge asked for its roots.
func (x *runExport) roots(e *events.Event) error {
	if x.lead == nil || x.lead.Step != StepClient {
		return nil
	}
	if msg, failed := e.Attrs.Lookup(events.AttrError); failed {
		x.lead.Roots, _ = json.Marshal(msg)
	} else {
		x.lead.Roots = json.RawMessage(e.Attrs.Get("roots"))
	}
	if !json.Valid(x.lead.Roots) {
		return fmt.Errorf("request %s (seq %d): the client's roots were cut in the log", e.RequestID, e.Seq)
	}
	return nil
}

// operator starts an operator step: a pipe request with no MCP request in
// front of it.
func (x *runExport) operator(e *events.Event) error {
	if x.lead != nil {
		return nil
	}
	x.lead = &Step{Step: StepOperator, Command: e.Attrs.Get(events.AttrCommand), Payload: json.RawMessage(e.Attrs.Get(events.AttrPayload))}
	if !json.Valid(x.lead.Payload) {
		return fmt.Errorf("operator request %s (seq %d): its payload was cut in the log and cannot be re-sent", e.RequestID, e.Seq)
	}
	return nil
}

// decision keeps an operator's approval decision; the bridge's own
// (config, timeout, a cancelled client) it makes again.
func (x *runExport) decision(e *events.Event) {
	switch by := e.Attrs.Get(events.AttrBy); by {
	case "config", "timeout", "bridge", "client":
	default:
		if x.lead != nil {
			x.lead.Decisions = append(x.lead.Decisions, Decision{Decision: e.Attrs.Get(events.AttrDecision), By: by, Reason: e.Attrs.Get(events.AttrReason)})
		}
	}
}

// tool keeps a recorded tool's result and descriptor (a discovered tool:
// the re-drive serves a stand-in instead of running it).
func (x *runExport) tool(e *events.Event) error {
	res, desc := e.Attrs.Get("result"), e.Attrs.Get("descriptor")
	if res == "" {
		return nil // not a recorded tool
	}
	if !json.Valid([]byte(res)) || !json.Valid([]byte(desc)) || strings.Contains(res, "[TRUNCATED") {
		return fmt.Errorf("request %s (seq %d): the tool's result was cut in the log (over 4 KiB), so it cannot be replayed", e.RequestID, e.Seq)
	}
	if x.s.Header.Tools == nil {
		x.s.Header.Tools = map[string]json.RawMessage{}
	}
	x.s.Header.Tools[e.Attrs.Get(events.AttrTool)] = json.RawMessage(desc)
	x.hosts = append(x.hosts, Step{Step: StepTool, Command: e.Attrs.Get(events.AttrTool), Result: json.RawMessage(res)})
	return nil
}

// audited keeps the descriptor of a recorded tool (a discovered one) the
// run called but never ran — refused by policy, an approval, its schema —
// from the call's audit envelope: the re-drive must know the tool to
// refuse it the same way (seed 73: it answered UnknownTool). A tool that
// ran is kept by tool (with its result).
func (x *runExport) audited(e *events.Event) {
	var env struct {
		Tool       string          `json:"tool"`
		Descriptor json.RawMessage `json:"descriptor"`
	}
	if json.Unmarshal([]byte(e.Attrs.Get(events.AttrEnvelope)), &env) != nil || env.Tool == "" {
		return
	}
	var d struct {
		ID       string `json:"id"`
		Recorded bool   `json:"recorded"`
	}
	if json.Unmarshal(env.Descriptor, &d) != nil || !d.Recorded || d.ID != env.Tool {
		return
	}
	if _, kept := x.s.Header.Tools[env.Tool]; kept {
		return
	}
	if x.s.Header.Tools == nil {
		x.s.Header.Tools = map[string]json.RawMessage{}
	}
	x.s.Header.Tools[env.Tool] = env.Descriptor
}

// upstream keeps an upstream's answer, with what it asked the client
// meanwhile.
func (x *runExport) upstream(e *events.Event) error {
	req, ans := e.Attrs.Get("request"), e.Attrs.Get(events.AttrAnswer)
	if !json.Valid([]byte(req)) || !json.Valid([]byte(ans)) || strings.Contains(ans, "[TRUNCATED") {
		return fmt.Errorf("request %s (seq %d): the upstream's answer was cut in the log (over 4 KiB) or is missing, so it cannot be replayed", e.RequestID, e.Seq)
	}
	x.hosts = append(x.hosts, Step{Step: StepUpstream, Server: e.Attrs.Get(events.AttrServer), Command: e.Attrs.Get("upstreamTool"),
		Params: json.RawMessage(req), Result: json.RawMessage(ans), Asks: x.asks})
	x.asks = nil
	return nil
}

// asked keeps what the upstream asked the client during the call.
func (x *runExport) asked(e *events.Event) error {
	p := e.Attrs.Get("request")
	if !json.Valid([]byte(p)) {
		return fmt.Errorf("request %s (seq %d): what the upstream asked the client was cut in the log", e.RequestID, e.Seq)
	}
	x.asks = append(x.asks, Ask{Method: e.Attrs.Get(events.AttrMethod), Params: json.RawMessage(p)})
	return nil
}

// answeredAsk keeps the client's answer to the upstream's last question,
// or the error the upstream was given instead.
func (x *runExport) answeredAsk(e *events.Event) {
	if len(x.asks) == 0 {
		return
	}
	a := &x.asks[len(x.asks)-1]
	if ans, ok := e.Attrs.Lookup(events.AttrAnswer); ok && json.Valid([]byte(ans)) {
		a.Answer, _ = json.Marshal(map[string]json.RawMessage{"result": json.RawMessage(ans)})
		return
	}
	a.Answer, _ = json.Marshal(map[string]any{"error": map[string]any{"code": -32603, "message": e.Attrs.Get(events.AttrError)}})
	a.Bridge = e.Code == events.CodeClientIncapable
}

// host keeps a workspace host's answer.
func (x *runExport) host(e *events.Event) error {
	var a pipe.Answer
	if err := json.Unmarshal([]byte(e.Attrs.Get(events.AttrAnswer)), &a); err != nil {
		return fmt.Errorf("request %s (seq %d): the host's answer was cut in the log (over 4 KiB) or is missing: %v", e.RequestID, e.Seq, err)
	}
	x.hosts = append(x.hosts, Step{Step: StepHost, Command: e.Attrs.Get(events.AttrCommand), Root: e.Attrs.Get("root"), Answer: &a})
	x.s.Header.Host = true
	return nil
}
