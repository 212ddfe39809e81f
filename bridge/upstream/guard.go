package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
	"github.com/tracebridge/tracebridge/projections"
)

// Guard is what the gateway needs of the guard's configuration (the
// executor's, which follows reloads).
type Guard interface {
	GuardActions(server string) guard.Actions
	FirstSight() string
	Flows() *guard.Flows
	ResultRules() *policy.RuleSet
}

// actions is what the guard's rules do for this server's tools now.
func (s *Server) actions() guard.Actions {
	if s.g.opts.Guard == nil {
		return guard.Default
	}
	return s.g.opts.Guard.GuardActions(s.name)
}

func (s *Server) firstSight() string {
	if s.g.opts.Guard == nil {
		return config.FirstSightInspect
	}
	return s.g.opts.Guard.FirstSight()
}

// judgeDescriptor is the guard's findings on t as this server lists it,
// beside the other servers' tools.
func (s *Server) judgeDescriptor(t *sdk.Tool) []guard.Finding {
	schema, _ := json.Marshal(t.InputSchema)
	return guard.Descriptor(guard.Tool{Server: s.name, Name: t.Name, Title: t.Title, Description: t.Description, Schema: schema},
		s.g.neighbours(s.name), s.actions())
}

// held reports whether a first sight of t is held, and why: the guard
// flagged it with a rule that blocks, or [gateway] first_sight = "review".
func (s *Server) held(t *sdk.Tool) (fs []guard.Finding, hold bool) {
	switch s.firstSight() {
	case config.FirstSightTrust:
		return nil, false
	case config.FirstSightReview:
		fs = s.judgeDescriptor(t)
		return append(fs, guard.Finding{Rule: "first-sight-review", Action: policy.ActionBlock, Why: "[gateway] first_sight = \"review\" holds every new tool until accepted"}), true
	}
	fs = s.judgeDescriptor(t)
	return fs, guard.Worst(fs) == policy.ActionBlock
}

// flaggedError is why a held tool's call is refused.
func (s *Server) flaggedError(p projections.Pin) error {
	var fs []guard.Finding
	json.Unmarshal([]byte(p.Findings), &fs)
	var why []string
	for _, f := range fs {
		why = append(why, f.Rule+": "+f.Why)
	}
	return events.Errorf(events.CodeToolFlagged, "the guard held tool %s of server %s on first sight (%s): `tracebridge tools list` shows why, `tracebridge tools accept %s` admits it",
		p.Tool, s.name, strings.Join(why, "; "), p.Name)
}

// neighbours are the tools the other servers listed last.
func (g *Gateway) neighbours(server string) []guard.Neighbour {
	g.listedMu.Lock()
	defer g.listedMu.Unlock()
	var out []guard.Neighbour
	for _, name := range slices.Sorted(maps.Keys(g.listed)) {
		if name == server {
			continue
		}
		for _, t := range g.listed[name] {
			out = append(out, guard.Neighbour{Server: name, Name: t})
		}
	}
	return out
}

// setListed remembers the tool names server listed.
func (g *Gateway) setListed(server string, names []string) {
	g.listedMu.Lock()
	defer g.listedMu.Unlock()
	g.listed[server] = names
}

// judge is res as the client may read it (guard.Result). The secrets it
// held are remembered for the cross-server rule, and registered with the
// redactor when no format of it knows them, before the answer is recorded:
// the log's copy is redacted as the client's is.
func (s *Server) judge(ctx context.Context, c executor.Call, tool string, res *sdk.CallToolResult) guard.Judged {
	red := s.g.opts.Emitter.Redactor()
	j := guard.Result(s.name, res, red, s.actions(), s.resultRules(ctx, c, tool))
	if s.g.opts.Guard != nil {
		s.g.opts.Guard.Flows().Remember(c.SessionID, s.name, c.RequestID, j.Secrets)
	}
	for _, v := range j.Secrets {
		if red.Scrub(v) == v {
			red.Register(v)
		}
	}
	return j
}

// recordJudgment records what the guard found in a result of tool
// (guard.result.judged), if anything; an error when a rule blocked it.
func (s *Server) recordJudgment(c executor.Call, tool string, j guard.Judged) error {
	if len(j.Findings) == 0 {
		return nil
	}
	attrs := guard.Attrs(j.Findings[0], j.Findings, s.g.opts.Emitter.Redactor().Fingerprint).With(projections.AttrUpTool, tool)
	if j.Result == nil {
		msg := fmt.Sprintf("the guard blocked server %s's result (rule %s): %s", s.name, j.Findings[0].Rule, j.Findings[0].Why)
		attrs.Set(events.AttrError, msg)
		s.emit(events.KindGuardResult, c.RequestID, c.OperationID, events.Denied, events.CodeResultBlocked, zeroTime, attrs)
		return events.Errorf(events.CodeResultBlocked, "%s", msg)
	}
	s.emit(events.KindGuardResult, c.RequestID, c.OperationID, events.OK, "", zeroTime, attrs)
	return nil
}

// resultRules is the policy's result rules for a call of tool (nil when
// there are none), seeing the call as its call rules did.
func (s *Server) resultRules(ctx context.Context, c executor.Call, tool string) guard.More {
	if s.g.opts.Guard == nil {
		return nil
	}
	rs := s.g.opts.Guard.ResultRules()
	if rs == nil {
		return nil
	}
	ann, _ := s.annotations.Load(tool)
	flags, _ := ann.(map[string]bool)
	in := policy.NewInput(policy.Tool{ID: s.exposed(tool), Server: s.name, Name: tool, Annotations: flags}, c.Args, "", c.SessionID.String(), policy.Caller{}, s.g.opts.Now())
	return guard.ResultRules(ctx, rs, in)
}
