package sessions

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/tracebridge/tracebridge/bridge/pipe"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
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
	type item struct {
		seq  uint64
		run  []events.Event
		note *events.Event
	}
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
	s := &Session{Header: SessionHeader{Name: in.Name, SessionID: in.Session, Config: in.Config, Tracebridge: in.Version}}
	if s.Header.Config == "" {
		// The configuration the bridge recorded when the session started,
		// not today's.
		recorded := false
		for i := range in.Notifications {
			if e := &in.Notifications[i]; e.Kind == events.KindMCPSessionStarted {
				s.Header.Config, recorded = e.Attrs.Lookup("config")
			}
		}
		if !recorded {
			s.Header.Config = in.TodayConfig
		}
		if strings.Contains(s.Header.Config, "[REDACTED") || strings.Contains(s.Header.Config, "[TRUNCATED") || strings.Contains(s.Header.Config, "[PAYLOAD:") {
			return nil, fmt.Errorf("session %s: the recorded configuration was redacted or cut in the log; export with --config FILE", in.Session)
		}
	}
	for _, it := range items {
		if it.note != nil {
			st := Step{Step: StepNotify, Method: it.note.Attrs.Get(events.AttrMethod)}
			if p := it.note.Attrs.Get(events.AttrParams); p != "" {
				if !json.Valid([]byte(p)) {
					return nil, fmt.Errorf("seq %d: the notification's params were cut or redacted into invalid JSON; it cannot be re-sent", it.note.Seq)
				}
				st.Params = json.RawMessage(p)
			}
			s.Steps = append(s.Steps, st)
			continue
		}
		if s.Header.Recorded.IsZero() {
			s.Header.Recorded = it.run[0].Time.UTC()
		}
		steps, err := exportRun(s, it.run)
		if err != nil {
			return nil, err
		}
		s.Steps = append(s.Steps, steps...)
	}
	if len(s.Steps) == 0 {
		return nil, fmt.Errorf("session %s left no requests to export", in.Session)
	}
	// Every server of the session's configuration is served by the
	// recording, called or not: one listed but never called must not be
	// unavailable in the re-drive.
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
	for _, server := range servers {
		if s.Header.Upstreams[server] != nil {
			continue
		}
		if s.Header.Upstreams == nil {
			s.Header.Upstreams = map[string][]json.RawMessage{}
		}
		s.Header.Upstreams[server] = []json.RawMessage{}
		for _, o := range in.Offers {
			if o.Server != server {
				continue
			}
			var uo UpstreamOffers
			for _, f := range []struct {
				v  string
				to *json.RawMessage
			}{{o.Prompts, &uo.Prompts}, {o.Resources, &uo.Resources}, {o.Templates, &uo.Templates}} {
				if f.v == "" {
					continue
				}
				if !json.Valid([]byte(f.v)) {
					return nil, fmt.Errorf("what %s listed besides tools is not whole JSON in the log; the session cannot list it", server)
				}
				*f.to = json.RawMessage(f.v)
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
				return nil, fmt.Errorf("the pinned descriptor of %s is not whole JSON in the log; the session cannot serve it", p.Name)
			}
			s.Header.Upstreams[server] = append(s.Header.Upstreams[server], json.RawMessage(p.Descriptor))
		}
	}
	return s, nil
}

// exportRun returns the step of one request and the host answers it got.
func exportRun(s *Session, run []events.Event) ([]Step, error) {
	var lead *Step
	var hosts []Step
	var asks []Ask // of the upstream call in flight
	var expect []Crossing
	answered := false
	for i := range run {
		e := &run[i]
		if InScopeEvent(e) {
			expect = append(expect, CrossingOf(e))
		}
		switch e.Kind {
		case events.KindMCPRequestReceived:
			if lead != nil {
				continue
			}
			lead = &Step{Step: StepClient, Method: e.Attrs.Get(events.AttrMethod), RequestID: e.RequestID}
			if e.Attrs.Get(events.AttrMethod) == "initialize" {
				s.Header.Client, s.Header.ProtocolVersion = e.Attrs.Get("client"), e.Attrs.Get("protocolVersion")
			}
		case events.KindMCPResponseSent:
			if lead == nil || lead.Step != StepClient || lead.Params != nil {
				continue
			}
			if p := e.Attrs.Get(events.AttrParams); p != "" {
				if !json.Valid([]byte(p)) || strings.Contains(p, "[TRUNCATED") {
					return nil, fmt.Errorf("request %s (seq %d): its params were cut in the log (over 4 KiB) and cannot be re-sent", e.RequestID, e.Seq)
				}
				lead.Params = json.RawMessage(p)
			}
			if a := e.Attrs.Get(events.AttrAnswer); json.Valid([]byte(a)) {
				lead.Reply = json.RawMessage(a) // cut (a log without a payload store): not compared
			}
			answered = true
		case events.KindMCPRootsListed:
			if lead != nil && lead.Step == StepClient {
				if msg, failed := e.Attrs.Lookup("error"); failed {
					lead.Roots, _ = json.Marshal(msg)
				} else {
					lead.Roots = json.RawMessage(e.Attrs.Get("roots"))
				}
				if !json.Valid(lead.Roots) {
					return nil, fmt.Errorf("request %s (seq %d): the client's roots were cut in the log", e.RequestID, e.Seq)
				}
			}
		case events.KindPipeAttempt:
			if s.Header.Pipe == "" {
				s.Header.Pipe = e.Attrs.Get(events.AttrPath)
			}
		case events.KindPipeRequestSent:
			if lead == nil { // an operator's request: no MCP in front of it
				lead = &Step{Step: StepOperator, Command: e.Attrs.Get(events.AttrCommand), Payload: json.RawMessage(e.Attrs.Get(events.AttrPayload))}
				if !json.Valid(lead.Payload) {
					return nil, fmt.Errorf("operator request %s (seq %d): its payload was cut in the log and cannot be re-sent", e.RequestID, e.Seq)
				}
			}
		case events.KindApprovalDecided:
			switch by := e.Attrs.Get(events.AttrBy); by {
			case "config", "timeout", "bridge", "client":
				// decided by the bridge itself: the re-drive decides again
			default:
				if lead != nil {
					lead.Decisions = append(lead.Decisions, Decision{Decision: e.Attrs.Get(events.AttrDecision), By: by, Reason: e.Attrs.Get(events.AttrReason)})
				}
			}
		case events.KindToolCompleted:
			res, desc := e.Attrs.Get("result"), e.Attrs.Get("descriptor")
			if res == "" {
				continue // not a recorded tool
			}
			if !json.Valid([]byte(res)) || !json.Valid([]byte(desc)) || strings.Contains(res, "[TRUNCATED") {
				return nil, fmt.Errorf("request %s (seq %d): the tool's result was cut in the log (over 4 KiB), so it cannot be replayed", e.RequestID, e.Seq)
			}
			if s.Header.Tools == nil {
				s.Header.Tools = map[string]json.RawMessage{}
			}
			s.Header.Tools[e.Attrs.Get(events.AttrTool)] = json.RawMessage(desc)
			hosts = append(hosts, Step{Step: StepTool, Command: e.Attrs.Get(events.AttrTool), Result: json.RawMessage(res)})
		case events.KindUpstreamResponse:
			req, ans := e.Attrs.Get("request"), e.Attrs.Get(events.AttrAnswer)
			if !json.Valid([]byte(req)) || !json.Valid([]byte(ans)) || strings.Contains(ans, "[TRUNCATED") {
				return nil, fmt.Errorf("request %s (seq %d): the upstream's answer was cut in the log (over 4 KiB) or is missing, so it cannot be replayed", e.RequestID, e.Seq)
			}
			hosts = append(hosts, Step{Step: StepUpstream, Server: e.Attrs.Get(events.AttrServer), Command: e.Attrs.Get("upstreamTool"),
				Params: json.RawMessage(req), Result: json.RawMessage(ans), Asks: asks})
			asks = nil
		case events.KindUpstreamAsked:
			p := e.Attrs.Get("request")
			if !json.Valid([]byte(p)) {
				return nil, fmt.Errorf("request %s (seq %d): what the upstream asked the client was cut in the log", e.RequestID, e.Seq)
			}
			asks = append(asks, Ask{Method: e.Attrs.Get(events.AttrMethod), Params: json.RawMessage(p)})
		case events.KindUpstreamAnswered:
			if len(asks) == 0 {
				continue
			}
			a := &asks[len(asks)-1]
			if ans, ok := e.Attrs.Lookup("answer"); ok && json.Valid([]byte(ans)) {
				a.Answer, _ = json.Marshal(map[string]json.RawMessage{"result": json.RawMessage(ans)})
			} else {
				a.Answer, _ = json.Marshal(map[string]any{"error": map[string]any{"code": -32603, "message": e.Attrs.Get(events.AttrError)}})
				a.Bridge = e.Code == events.CodeClientIncapable
			}
		case events.KindPipeResponseReceived:
			var a pipe.Answer
			if err := json.Unmarshal([]byte(e.Attrs.Get(events.AttrAnswer)), &a); err != nil {
				return nil, fmt.Errorf("request %s (seq %d): the host's answer was cut in the log (over 4 KiB) or is missing: %v", e.RequestID, e.Seq, err)
			}
			hosts = append(hosts, Step{Step: StepHost, Command: e.Attrs.Get(events.AttrCommand), Root: e.Attrs.Get("root"), Answer: &a})
			s.Header.Host = true
		}
	}
	if lead == nil {
		return nil, nil // host- or operator-side events of no request the session re-drives
	}
	if lead.Step == StepClient && !answered {
		return nil, fmt.Errorf("request %s (%s) was never answered (the bridge stopped mid-request), so the session cannot be re-driven past it", run[0].RequestID, lead.Method)
	}
	lead.Expect = expect
	return append([]Step{*lead}, hosts...), nil
}
