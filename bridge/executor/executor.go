package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/policy"
	"github.com/tracebridge/tracebridge/projections"
)

// Emitter is what the executor needs of events.Emitter.
type Emitter interface {
	events.Recorder
	Redactor() *events.Redactor
}

// Options configures New. Catalog, Emitter and Log are required.
type Options struct {
	Catalog *Catalog
	Emitter Emitter
	// Log reads decisions back (approval prompts).
	Log RequestReader
	// Config shapes policy, approval and secrets. Nil: config.Default().
	Config *config.Config
	// ConfigErr, when set, is why the configuration could not be loaded:
	// every call is denied with ConfigInvalid.
	ConfigErr error
	// After waits for an approval's deadline. Nil: time.After. A session
	// re-drive answers from the recording (a recorded timeout fires at
	// once, a recorded decision never times out).
	After func(time.Duration) <-chan time.Time
	// Getenv and ReadFile resolve secrets. Nil: os.Getenv, os.ReadFile.
	Getenv   func(string) string
	ReadFile func(string) ([]byte, error)
	// Now is the clock for deadlines. Nil: time.Now.
	Now func() time.Time
	// PollEvery is how often a prompt looks for a decision. Zero: 100ms.
	PollEvery time.Duration
	// FlushTimeout bounds the wait for an intent to become durable. Zero: 10s.
	FlushTimeout time.Duration
	Logger       *slog.Logger
}

// Executor runs tool calls. It is safe for concurrent use.
type Executor struct {
	opts  Options
	rule  atomic.Pointer[rules] // what the configuration decides; Reload swaps it
	flows *guard.Flows
}

// rules is one configuration's policy, secrets and settings: a call reads
// one snapshot from start to end.
type rules struct {
	cfg    *config.Config
	policy *gate
	broker *broker
}

// Reload puts a new configuration (or a broken one: every call is then
// ConfigInvalid) in force for the calls that start from now on.
func (x *Executor) Reload(cfg *config.Config, cfgErr error) {
	if cfg == nil {
		cfg = config.Default()
	}
	for _, v := range append(ConfiguredSecrets(cfg.Secrets, x.opts.Getenv, x.opts.ReadFile), cfg.Credentials()...) {
		x.opts.Emitter.Redactor().Register(v)
	}
	x.rule.Store(&rules{cfg: cfg, policy: newPolicy(cfg, cfgErr),
		broker: &broker{refs: cfg.Secrets, getenv: x.opts.Getenv, readFile: x.opts.ReadFile, redactor: x.opts.Emitter.Redactor()}})
}

// New returns an executor.
func New(opts Options) *Executor {
	if opts.Config == nil {
		opts.Config = config.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.ReadFile == nil {
		opts.ReadFile = os.ReadFile
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.PollEvery <= 0 {
		opts.PollEvery = 100 * time.Millisecond
	}
	if opts.FlushTimeout <= 0 {
		opts.FlushTimeout = 10 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	x := &Executor{opts: opts, flows: guard.NewFlows()}
	// Every configured secret is redacted from the start, not only after a
	// tool first asked for it: the first call may carry the value itself.
	x.Reload(opts.Config, opts.ConfigErr)
	return x
}

// Catalog returns the executor's catalog.
func (x *Executor) Catalog() *Catalog { return x.opts.Catalog }

// Invocation is one tool call.
type Invocation struct {
	Tool        string
	Args        json.RawMessage
	RequestID   events.ID
	SessionID   events.ID
	Traceparent string
	// Client names the caller (clientInfo name/version) for the security
	// context recorded with the policy decision.
	Client string
	// Transport is how the client reached the bridge: pipe (stdio) or tcp
	// (the HTTP front door). The rules see it as caller.transport.
	Transport string
	// User is who the front door authenticated ([auth]); zero over stdio
	// and with the data dir's token. The rules see it as user.
	User identity.User
	// Progress reports progress to the client (nil: it asked for none).
	Progress func(progress, total float64, message string)
	// Round is the client's retry of a call its server answered with
	// input requests (2026-07-28's multi-round-trip): zero on a first call.
	Round InputRound
}

// InputRound is what a client sends back when it retries a call whose
// server asked it for input: its answers by input request id (a JSON
// object) and the server's requestState, byte for byte.
type InputRound struct {
	Responses json.RawMessage
	State     string
}

// IsZero reports whether the call is a first call, not a retry.
func (r InputRound) IsZero() bool { return r.Responses == nil && r.State == "" }

// Attributes of a Recorded tool's tool.completed: its result and its
// descriptor, as JSON.
const (
	AttrResult     = "result"
	AttrDescriptor = "descriptor"
)

// Result is what a call came to. Code is empty on success.
type Result struct {
	OperationID events.ID
	Value       any
	Code        events.Code
	Message     string
	// Action tells the operator what would make the call succeed.
	Action string
	// Relayed, when set, is the protocol error the tool's server answered:
	// the client is answered with it as the server sent it.
	Relayed Relayed
}

// Relayed is an error a tool's server answered in the protocol itself (a
// JSON-RPC error): its code, message and data, as sent.
type Relayed interface {
	error
	Relay() (code int64, message string, data json.RawMessage)
}

// OK reports whether the tool ran and succeeded.
func (r *Result) OK() bool { return r.Code == "" }

// call carries one invocation through the pipeline.
type call struct {
	x     *Executor
	r     *rules // the configuration in force: when the call started, or when it was decided again
	inv   Invocation
	op    events.ID
	ask   events.ID // the approval asked for: the operation id, a fresh one when asked again
	asked bool      // an operator was asked (the policy may have changed while they decided)
	// deciders is who may approve the call ([approval] deciders, four_eyes)
	deciders policy.Deciders
	start    time.Time
	tool     *Tool
	env      envelope
}

// emit records one step of the call.
func (c *call) emit(kind string, outcome events.Outcome, code events.Code, since time.Time, attrs events.Attrs) {
	c.emitID(events.ID{}, kind, outcome, code, since, attrs)
}

// emitID is emit with a chosen event id (zero: a fresh one).
func (c *call) emitID(id events.ID, kind string, outcome events.Outcome, code events.Code, since time.Time, attrs events.Attrs) {
	attrs = attrs.With(events.AttrTool, c.inv.Tool) // a caller's attributes stay its own
	e := events.Event{ID: id, Kind: kind, RequestID: c.inv.RequestID, OperationID: c.op, SessionID: c.inv.SessionID,
		Traceparent: c.inv.Traceparent, Outcome: outcome, Code: code, Attrs: attrs}
	c.x.opts.Emitter.Emit(e.Took(since, c.x.opts.Now()))
}

// Execute runs inv through the pipeline and returns its result. It never
// panics and always records an audit envelope.
func (x *Executor) Execute(ctx context.Context, inv Invocation) (res Result) {
	c := &call{x: x, r: x.rule.Load(), inv: inv, op: x.opts.Emitter.NewID(), start: x.opts.Now()}
	c.ask = c.op
	c.env = envelope{Tool: inv.Tool, RequestID: inv.RequestID.String(), OperationID: c.op.String(), Args: summarize(c.redact("args", string(inv.Args)))}
	defer func() {
		if r := recover(); r != nil { // a bug in the pipeline itself: still a structured result
			x.opts.Logger.Error("executor panic", "tool", inv.Tool, "panic", c.redact("panic", fmt.Sprint(r)), "stack", string(debug.Stack()))
			res = Result{Code: events.CodeToolPanic, Message: "internal error in the executor"}
		}
		res.OperationID = c.op
		c.audit(&res)
	}()
	c.emit(events.KindExecutorStarted, events.OK, "", time.Time{}, events.A(events.AttrClient, inv.Client, events.AttrArgsHash, ArgsHash(inv.Args)))
	if r, done := c.resolve(ctx); done {
		return r
	}
	if r, done := c.guardArgs(); done {
		return r
	}
	if r, done := c.authorize(ctx); done {
		return r
	}
	secrets, r, done := c.secrets()
	if done {
		return r
	}
	if r, done := c.approve(ctx); done {
		return r
	}
	// An approval is bound to the policy it was asked under: when the
	// configuration's policy changed while the operator decided, the call
	// is decided again under the new one (and asked again if it still
	// needs approval), never run on a stale decision.
	for tries := 0; c.asked && c.x.rule.Load().policy.version != c.r.policy.version; tries++ {
		if tries == maxRedecisions {
			return failed(events.CodePolicyDenied, "the policy changed every time this call was decided again: retry it once the configuration settles")
		}
		c.r, c.asked, c.ask = c.x.rule.Load(), false, c.x.opts.Emitter.NewID()
		if r, done := c.authorize(ctx); done {
			return r
		}
		if r, done := c.approve(ctx); done {
			return r
		}
	}
	if r, done := c.ensureLogged(ctx); done {
		return r
	}
	return c.run(ctx, secrets)
}

// redact is what v may be as the call's key (the shared secret cache read
// once for the request, as its events read it).
func (c *call) redact(key, v string) string {
	return c.x.opts.Emitter.Redactor().ValueFor(c.inv.RequestID, key, v)
}

// fail ends the call at a step.
func fail(code events.Code, msg string) (Result, bool) {
	return failed(code, msg), true
}

// failed is a result with code: its action is the code's, from the one
// table (events.ActionFor), so the tool result, the audit envelope, the
// verdict and the UI say the same words.
func failed(code events.Code, msg string) Result {
	return Result{Code: code, Message: msg, Action: events.ActionFor(code)}
}

func (c *call) resolve(ctx context.Context) (Result, bool) {
	t, ok := c.x.opts.Catalog.Lookup(c.inv.Tool)
	if !ok {
		c.emit(events.KindExecutorCatalog, events.Error, events.CodeUnknownTool, time.Time{}, nil)
		return fail(events.CodeUnknownTool, fmt.Sprintf("no tool %q in this bridge's catalog", c.inv.Tool))
	}
	c.tool = t
	c.env.Descriptor = &t.Descriptor
	// A tool that may not be called now (changed, held) is refused whatever
	// its arguments.
	if t.Admit != nil {
		if err := t.Admit(ctx); err != nil {
			e := events.AsErr(err, events.CodeToolChanged)
			msg := c.redact("error", e.Msg)
			c.emit(events.KindExecutorCatalog, events.OutcomeOf(e.Code), e.Code, time.Time{}, events.A("source", t.Source, "error", msg))
			return fail(e.Code, msg)
		}
	}
	if err := t.validate(c.inv.Args); err != nil {
		msg := c.redact("error", err.Error())
		c.emit(events.KindExecutorCatalog, events.Error, events.CodeInvalidArguments, time.Time{}, events.A("error", msg))
		return fail(events.CodeInvalidArguments, "invalid arguments: "+msg)
	}
	c.emit(events.KindExecutorCatalog, events.OK, "", time.Time{}, events.A("source", t.Source, "category", t.Category))
	return Result{}, false
}

// maxRedecisions bounds how often a call is decided again because the
// policy changed while an operator decided it.
const maxRedecisions = 3

func (c *call) authorize(ctx context.Context) (Result, bool) {
	d := c.r.policy.decide(ctx, &c.tool.Descriptor, c.ruleInput)
	c.env.Policy = &d
	attrs := events.A(events.AttrReason, d.Reason, events.AttrClient, c.inv.Client, "session", c.inv.SessionID.String())
	if d.Version != "" {
		attrs.Set(events.AttrPolicyVersion, d.Version)
	}
	if d.Rule != "" {
		attrs.Set(events.AttrRule, d.Rule)
		attrs.Set(events.AttrEffect, d.Effect)
	}
	if !d.Allowed {
		c.emit(events.KindPolicyDecided, events.Denied, d.Code, time.Time{}, attrs)
		return fail(d.Code, d.Reason)
	}
	c.emit(events.KindPolicyDecided, events.OK, "", time.Time{}, attrs)
	return Result{}, false
}

func (c *call) secrets() (map[string]string, Result, bool) {
	names := append(append([]string(nil), c.tool.Secrets...), c.r.cfg.Tools[c.tool.ID].Secrets...)
	if len(names) == 0 {
		return nil, Result{}, false
	}
	t0 := c.x.opts.Now()
	values, outcomes, err := c.r.broker.resolve(names)
	c.env.Secrets = outcomes
	b, _ := json.Marshal(outcomes)
	if err != nil {
		c.emit(events.KindSecretsResolved, events.Error, events.CodeSecretUnresolved, t0, events.A("refs", string(b)))
		r, _ := fail(events.CodeSecretUnresolved, err.Error())
		return nil, r, true
	}
	c.emit(events.KindSecretsResolved, events.OK, "", t0, events.A("refs", string(b)))
	return values, Result{}, false
}

// approvalRequired applies the per-tool override to the descriptor.
func (c *call) approvalRequired() bool {
	if p := c.env.Policy; p != nil && p.Effect == policy.EffectApprove {
		return true
	} else if p != nil && p.Effect == policy.EffectAllow {
		return false
	}
	req := c.tool.Approval
	if o := c.r.cfg.Tools[c.tool.ID].Approval; o != "" {
		req = o
	}
	return req == "always"
}

func (c *call) approve(ctx context.Context) (Result, bool) {
	if !c.approvalRequired() {
		c.env.Approval = &approvalRecord{Required: false}
		return Result{}, false
	}
	mode := c.r.cfg.Approval.Mode
	hash := ArgsHash(c.inv.Args)
	rec := &approvalRecord{Required: true, Mode: mode, ArgsHash: hash}
	c.env.Approval = rec
	decided := func(outcome events.Outcome, code events.Code, decision, by, reason string, t0 time.Time) {
		rec.Decision, rec.By, rec.Reason = decision, by, reason
		c.emitID(projections.DecisionID(c.ask), events.KindApprovalDecided, outcome, code, t0, events.A(events.AttrApprovalID, c.ask.String(), events.AttrDecision, decision, events.AttrArgsHash, hash, "by", by, events.AttrReason, reason))
	}
	switch mode {
	case config.ModeAllow:
		decided(events.OK, "", events.Approve, "config", "approval.mode is allow", time.Time{})
		return Result{}, false
	case config.ModeDeny:
		decided(events.Denied, events.CodeApprovalDenied, events.Deny, "config", "approval.mode is deny", time.Time{})
		return fail(events.CodeApprovalDenied, "approval is required and [approval] mode is deny: set mode = \"prompt\" (an operator decides) or [tools."+c.tool.ID+"] approval = \"never\"")
	}
	// prompt: the request is durable before anyone is asked.
	c.asked = true
	t0 := c.x.opts.Now()
	deadline := t0.Add(c.r.cfg.ApprovalTimeout())
	// The arguments whole (redacted): what the operator approves must be
	// viewable whole before deciding; past an attribute's size the payload
	// store keeps them.
	asked := events.A(events.AttrApprovalID, c.ask.String(), events.AttrArgsHash, hash, events.AttrDeadline, deadline.UTC().Format(time.RFC3339Nano),
		"args", c.x.opts.Emitter.Redactor().Scrub(string(c.inv.Args)))
	if c.tool.Pin != "" {
		asked.Set(events.AttrPin, c.tool.Pin)
	}
	// What the operator weighs besides the arguments: who asks, and what
	// the tool says of itself.
	asked.Set(events.AttrClient, c.inv.Client)
	if server := c.tool.Server(); server != "" {
		asked.Set(events.AttrServer, server)
	}
	asked.Set(events.AttrAnnotations, annotationsOf(c.tool))
	c.deciders = c.decidersOf()
	if len(c.deciders.Groups) > 0 {
		asked.Set(events.AttrDeciders, strings.Join(c.deciders.Groups, ","))
	}
	if c.deciders.FourEyes {
		asked.Set(events.AttrFourEyes, "true")
	}
	c.emit(events.KindApprovalRequested, events.Pending, "", time.Time{}, asked)
	if err := c.flush(ctx); err != nil {
		decided(events.Denied, events.CodeLogUnavailable, events.Deny, "bridge", "the approval request could not be recorded: "+err.Error(), t0)
		return fail(events.CodeLogUnavailable, "the approval request could not be recorded in the event log")
	}
	c.x.opts.Logger.Info("approval needed", "tool", c.tool.ID, "approval", c.ask.String(), "deadline", deadline.Format(time.RFC3339),
		"run", "tracebridge approvals approve "+c.ask.String())
	stopProgress := c.progressWhileWaiting(deadline)
	e, ok, err := awaitDecision(ctx, c.x.opts.Log, c.inv.RequestID, c.ask, c.r.cfg.Approval.DeciderMembers, deadline, c.x.opts.PollEvery, c.x.opts.Now, c.x.opts.After)
	stopProgress()
	switch {
	case err != nil:
		decided(events.Cancelled, events.CodeCancelled, events.Deny, "client", "the call was cancelled while waiting for approval", t0)
		return fail(events.CodeCancelled, "cancelled while waiting for approval")
	case !ok:
		decided(events.Timeout, events.CodeApprovalTimeout, events.Deny, "timeout", "no decision before "+deadline.UTC().Format(time.RFC3339), t0)
		// An operator's decision may have landed first: the log keeps one
		// decision per approval, and the call follows the one it kept.
		if c.flush(ctx) == nil {
			if evs, err := c.x.opts.Log.ByRequest(ctx, c.inv.RequestID); err == nil {
				if held, found := decisionOf(evs, c.ask, c.r.cfg.Approval.DeciderMembers); found && held.Attrs.Get(events.AttrBy) != "timeout" {
					return c.follow(held, hash, rec)
				}
			}
		}
		return fail(events.CodeApprovalTimeout, "no operator decided within "+c.r.cfg.Approval.Timeout)
	}
	return c.follow(e, hash, rec)
}

// follow applies an operator's decision e to the call.
func (c *call) follow(e events.Event, hash string, rec *approvalRecord) (Result, bool) {
	switch {
	case e.Attrs.Get(events.AttrArgsHash) != hash:
		rec.Decision, rec.By, rec.Reason = events.Deny, "bridge", "the decision names other arguments"
		return fail(events.CodeApprovalDenied, "the operator's decision was bound to different arguments than this call's")
	case e.Attrs.Get(events.AttrDecision) != events.Approve:
		rec.Decision, rec.By, rec.Reason = events.Deny, e.Attrs.Get(events.AttrBy), e.Attrs.Get(events.AttrReason)
		msg := "an operator denied the call"
		if r := e.Attrs.Get(events.AttrReason); r != "" {
			msg += ": " + r
		}
		return fail(events.CodeApprovalDenied, msg)
	}
	decider := identity.FromAttrsAs(identity.DeciderPrefix, e.Attrs.Get)
	if !decider.IsZero() {
		rec.Decider = &decider
	}
	if err := c.deciders.Check(c.inv.User, decider); err != nil {
		// The log keeps one decision per approval: one that may not
		// approve this call ends it, denied, rather than leave it waiting.
		rec.Decision, rec.By, rec.Reason = events.Deny, "bridge", err.Error()
		c.emit(events.KindApprovalRefused, events.Denied, events.CodeDeciderRefused, time.Time{}, events.A(events.AttrApprovalID, c.ask.String(), "by", e.Attrs.Get(events.AttrBy), "error", err.Error()))
		return fail(events.CodeDeciderRefused, "the approval came from someone who may not give it: "+err.Error())
	}
	rec.Decision, rec.By, rec.Reason = events.Approve, e.Attrs.Get(events.AttrBy), e.Attrs.Get(events.AttrReason)
	return Result{}, false
}

// decidersOf is who may approve this call ([approval] deciders and
// four_eyes; four eyes for a destructive tool: side effects, or a
// destructiveHint on a tool not read-only).
func (c *call) decidersOf() policy.Deciders {
	a := c.r.cfg.Approval
	d := policy.Deciders{Groups: a.Deciders}
	switch a.FourEyes {
	case config.FourEyesAll:
		d.FourEyes = true
	case config.FourEyesDestructive:
		f := projections.AnnotationFlags(annotationsOf(c.tool))
		d.FourEyes = c.tool.SideEffects || f["destructiveHint"] && !f["readOnlyHint"]
	}
	return d
}

func (c *call) flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.x.opts.FlushTimeout)
	defer cancel()
	return c.x.opts.Emitter.Flush(ctx, c.inv.RequestID)
}

// ensureLogged makes the call's intent durable before a tool with side
// effects runs, and, when policy says so, before a read-only one.
func (c *call) ensureLogged(ctx context.Context) (Result, bool) {
	readOnlyOK := *c.r.cfg.Policy.ReadOnlyWithoutLog
	if !c.tool.SideEffects && readOnlyOK {
		return Result{}, false
	}
	err := c.flush(ctx)
	if err == nil {
		return Result{}, false
	}
	c.x.opts.Logger.Error("refusing a tool: its intent is not durable", "tool", c.tool.ID, "err", err)
	why := c.redact("error", err.Error())
	c.emit(events.KindToolCompleted, events.Denied, events.CodeLogUnavailable, time.Time{}, events.A("error", why))
	return fail(events.CodeLogUnavailable, "the event log cannot be written ("+why+"), and this tool may not run without evidence")
}

// run starts the tool on its own goroutine so a tool that ignores its
// context cannot hold the call past its timeout.
func (c *call) run(ctx context.Context, secrets map[string]string) Result {
	timeout := c.r.cfg.ToolTimeout(c.tool.ID)
	if c.r.cfg.Tools[c.tool.ID].Timeout == "" && c.tool.Timeout > 0 {
		timeout = c.tool.Timeout
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := c.x.opts.Now()
	c.emit(events.KindToolStarted, events.OK, "", time.Time{}, events.A("timeout", timeout.String()))
	type outcome struct {
		v     any
		err   error
		panic any
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{panic: r}
			}
		}()
		v, err := c.tool.Run(rctx, Call{RequestID: c.inv.RequestID, OperationID: c.op, SessionID: c.inv.SessionID, Args: c.inv.Args, Secrets: secrets, Round: c.inv.Round,
			Traceparent: c.inv.Traceparent, Progress: c.inv.Progress})
		done <- outcome{v: v, err: err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-rctx.Done():
		o.err = rctx.Err()
	}
	var res Result
	switch {
	case o.panic != nil:
		msg := c.redact("panic", fmt.Sprint(o.panic))
		c.x.opts.Logger.Error("tool panicked", "tool", c.tool.ID, "panic", msg)
		res = failed(events.CodeToolPanic, "the tool panicked: "+msg)
	case errors.Is(o.err, context.DeadlineExceeded) && ctx.Err() == nil:
		res = failed(events.CodeToolTimeout, "the tool did not finish within "+timeout.String()+" ([tools."+c.tool.ID+"] timeout)")
	case ctx.Err() != nil:
		res = failed(events.CodeCancelled, "the call was cancelled")
	case o.err != nil:
		e := events.AsErr(o.err, events.CodeToolError)
		res = failed(e.Code, c.redact("error", e.Msg))
		errors.As(o.err, &res.Relayed)
	default:
		res = c.guardResult(o.v)
	}
	var attrs events.Attrs
	if res.OK() {
		b, _ := json.Marshal(res.Value)
		c.env.Result = summarize(c.redact("result", string(b)))
		if c.tool.Recorded {
			d, _ := json.Marshal(&c.tool.Descriptor)
			attrs = events.A(AttrResult, string(b), AttrDescriptor, string(d)) // the emitter redacts them
		}
	} else {
		attrs = events.A(events.AttrError, res.Message)
		c.env.Result = res.Message
	}
	c.emit(events.KindToolCompleted, events.OutcomeOf(res.Code), res.Code, t0, attrs)
	return res
}
