package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

var zeroTime time.Time

// Attributes of upstream.response.received that a recorded session
// replays: the arguments sent and the answer received, as JSON.
const (
	AttrRequest = "request"
	AttrAnswer  = "answer"
)

// maxProgressEvents bounds the progress notifications one call records
// (all are forwarded to the client).
const maxProgressEvents = 50

// progressSink forwards an upstream's progress for one call to its client.
type progressSink struct {
	rec      *callRec
	forward  func(progress, total float64, message string)
	touch    func() // the upstream is still at work: its deadline starts again
	recorded atomic.Int32
}

// call runs tool (the upstream's own name) for an executor call: the
// request goes to the upstream with a traceparent naming this hop's span and a
// progress token in _meta, and its answer comes back as the upstream sent
// it. Every failure is an *events.Err with an upstream code.
func (s *Server) call(ctx context.Context, c executor.Call, tool string) (any, error) {
	l, err := s.session(ctx, c.RequestID, c.OperationID)
	if err != nil {
		return nil, err
	}
	defer l.begin(c.RequestID, c.OperationID, downstreamOf(ctx))()
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	case <-ctx.Done():
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s has %d calls in flight and none ended before this call's deadline", s.name, maxInFlight)
	}
	rec := &callRec{req: c.RequestID, op: c.OperationID, tool: tool, span: s.g.opts.Emitter.NewID()}
	// The pin holds at the moment of writing, on the session that carries
	// the call: after any restart and refresh, after an approval wait.
	release, err := s.writeGate(ctx, l, tool)
	if err != nil {
		e := events.AsErr(err, events.CodeToolChanged)
		s.emit(events.KindUpstreamRefused, c.RequestID, c.OperationID, events.OutcomeOf(e.Code), e.Code, zeroTime,
			events.A(projections.AttrUpTool, tool, "error", e.Msg))
		return nil, e
	}
	rec.written = release
	defer release()
	args := json.RawMessage("{}")
	if len(c.Args) > 0 && string(c.Args) != "null" {
		args = c.Args
	}
	params := &sdk.CallToolParams{Name: tool, Arguments: args}
	// The server's log messages at info and above (2026-07-28 asks per
	// request; older protocols were asked once, at connect).
	//lint:ignore SA1019 logging is deprecated in 2026-07-28 but in its window; the gateway forwards it (issue 13)
	meta := sdk.Meta{sdk.MetaKeyLogLevel: l.level()}
	// The upstream's spans are children of this hop's span, in the
	// client's trace (or the request's own): not of the client's span.
	meta["traceparent"] = events.Traceparent(c.Traceparent, c.RequestID, rec.span)
	// The deadline is the server's timeout since the call was sent or since
	// the server last reported progress on it: a long operation that
	// reports progress is not cut off.
	cctx, touch, cancel := idleTimeout(context.WithValue(ctx, callKey{}, rec), s.cfg.RequestTimeout())
	defer cancel()
	if c.Progress != nil { // the client asked for progress: so does the bridge
		token := c.OperationID.String()
		meta["progressToken"] = token
		s.progress.Store(token, &progressSink{rec: rec, forward: c.Progress, touch: touch})
		defer s.progress.Delete(token)
	}
	params.Meta = l.requestMeta(ctx, meta)
	if !c.Round.IsZero() { // the client's retry: its answers and the server's state go back as they came
		if len(c.Round.Responses) > 0 {
			if err := json.Unmarshal(c.Round.Responses, &params.InputResponses); err != nil {
				return nil, events.Errorf(events.CodeInvalidArguments, "the answers to server %s's input requests do not decode: %v", s.name, err)
			}
		}
		params.RequestState = c.Round.State
	}
	var client string
	if d := executor.ClientOf(ctx); d != nil {
		client = d.Key()
	}
	first, round := c.RequestID, 1
	if !c.Round.IsZero() {
		first, round = s.rounds.retry(roundKey(c.Round.State, client, tool, args), c.RequestID)
	}
	t0 := s.g.opts.Now()
	res, err := l.sess.CallTool(cctx, params)
	raw := l.conn.takeResult(rec.rpcID) // nil over HTTP: encoded again below
	// What the server sent before its answer reaches the client first.
	l.order.settle(ctx)
	attrs := func(kv ...string) events.Attrs {
		return events.A(append(append([]string{"rpcId", rec.rpcID, projections.AttrUpTool, tool}, roundAttrs(first, round)...), kv...)...)
	}
	if err != nil {
		var answer string
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": rpcErr.Code, "message": rpcErr.Message}})
			answer = string(b)
		}
		return nil, s.failed(ctx, cctx, err, l, rec, "tools/call "+tool, t0, attrs(AttrRequest, string(args), AttrAnswer, answer))
	}
	// The request and the answer as sent (redacted by the emitter): what a
	// recorded session replays and compares.
	answer := []byte(raw)
	if len(answer) == 0 {
		answer, _ = json.Marshal(res)
	}
	sent := string(args)
	j := s.judge(ctx, c, tool, res)
	if res.IsError {
		shown := res
		if j.Result != nil {
			shown = j.Result
		}
		msg := fmt.Sprintf("server %s's tool %s failed: %s", s.name, tool, oneLine(s.g.redact(textOf(shown)), 1000))
		s.emit(events.KindUpstreamResponse, c.RequestID, c.OperationID, events.Error, events.CodeUpstreamError, t0,
			attrs("error", msg, "isError", "true", AttrRequest, sent, AttrAnswer, string(answer)))
		if err := s.recordJudgment(c, tool, j); err != nil {
			return nil, err
		}
		return nil, events.Errorf(events.CodeUpstreamError, "%s", msg)
	}
	if len(res.InputRequests) > 0 { // the server asks for input: the client's retry is this call's next round
		s.rounds.asked(roundKey(res.RequestState, client, tool, args), first, round)
	}
	s.emit(events.KindUpstreamResponse, c.RequestID, c.OperationID, events.OK, "", t0,
		attrs("content", fmt.Sprint(len(res.Content)), AttrRequest, sent, AttrAnswer, string(answer)))
	if err := s.recordJudgment(c, tool, j); err != nil {
		return nil, err
	}
	return j.Result, nil
}

// failed records and explains a request to the upstream that got no
// answer: the client cancelled (the SDK told the upstream), the deadline
// passed, the upstream answered a JSON-RPC error, or the connection broke.
// what names the request ("tools/call x"); attrs go on its event.
func (s *Server) failed(ctx, cctx context.Context, err error, l *link, rec *callRec, what string, t0 time.Time, attrs events.Attrs) error {
	var rpcErr *jsonrpc.Error
	if r := l.oauth.takeRefusal(); r != nil { // the server asked for authorization the bridge does not hold
		msg := s.g.redact(s.safe(r.Error()))
		attrs.Set("error", msg)
		s.emit(events.KindUpstreamUnavailable, rec.req, rec.op, events.Denied, events.CodeUpstreamUnauthorized, t0, attrs)
		return events.Errorf(events.CodeUpstreamUnauthorized, "%s", msg)
	}
	switch {
	case ctx.Err() != nil:
		s.emit(events.KindUpstreamCancelled, rec.req, rec.op, events.Cancelled, events.CodeCancelled, t0, attrs)
		return events.Errorf(events.CodeCancelled, "the request was cancelled; server %s was told (notifications/cancelled)", s.name)
	case errors.Is(context.Cause(cctx), context.DeadlineExceeded):
		msg := fmt.Sprintf("server %s did not answer %s within %s (nor report progress on it)", s.name, what, s.cfg.RequestTimeout())
		attrs.Set("error", msg)
		s.emit(events.KindUpstreamTimeout, rec.req, rec.op, events.Timeout, events.CodeUpstreamTimeout, t0, attrs)
		return events.Errorf(events.CodeUpstreamTimeout, "%s", msg)
	case errors.As(err, &rpcErr):
		msg := fmt.Sprintf("server %s answered %s with JSON-RPC error %d: %s", s.name, what, rpcErr.Code, oneLine(s.g.redact(rpcErr.Message), 500))
		attrs.Set("error", msg)
		attrs.Set("rpcCode", fmt.Sprint(rpcErr.Code))
		s.emit(events.KindUpstreamResponse, rec.req, rec.op, events.Error, events.CodeUpstreamError, t0, attrs)
		return &relayedError{Err: events.Errorf(events.CodeUpstreamError, "%s", msg), rpc: rpcErr, redact: s.g.redact}
	}
	e := s.lost(l, err)
	attrs.Set("error", e.Msg)
	s.emit(events.KindUpstreamUnavailable, rec.req, rec.op, events.OutcomeOf(e.Code), e.Code, t0, attrs)
	return e
}

// lost explains a call whose connection broke: the upstream broke the
// protocol, exited mid-call (with its code and stderr), or went away.
func (s *Server) lost(l *link, err error) *events.Err {
	conn, p := l.conn, l.proc
	if f := conn.fault(); f != "" {
		return events.Errorf(events.CodeUpstreamProtocol, "server %s (%s) %s; the bridge restarts it on the next call", s.name, s.cfg.Describe(), f)
	}
	if p != nil {
		p.waitExit(200 * time.Millisecond)
		if st := p.exitText(); st != "" {
			return events.Errorf(events.CodeUpstreamUnavailable, "server %s (`%s`) %s during the call", s.name, s.cfg.Describe(), st)
		}
	}
	return events.Errorf(events.CodeUpstreamUnavailable, "server %s (%s) lost the connection during the call: %s", s.name, s.cfg.Describe(), oneLine(s.g.redact(s.safe(err.Error())), 300))
}

// relayedError is a JSON-RPC error an upstream answered: an UpstreamError
// on the record, and to the client the server's own code, message and
// data (its message redacted), as a client reaching it directly is told
// (executor.Relayed).
type relayedError struct {
	*events.Err
	rpc    *jsonrpc.Error
	redact func(string) string
}

func (e *relayedError) Unwrap() error { return e.Err }

func (e *relayedError) Relay() (int64, string, json.RawMessage) {
	data := json.RawMessage(e.redact(string(e.rpc.Data)))
	if len(e.rpc.Data) == 0 || !json.Valid(data) {
		data = nil
	}
	return e.rpc.Code, e.redact(e.rpc.Message), data
}

// textOf is a result's text content.
func textOf(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// onProgress forwards an upstream's progress to the client whose call it
// belongs to, and records it (the first maxProgressEvents of a call).
func (s *Server) onProgress(_ context.Context, req *sdk.ProgressNotificationClientRequest) {
	if req == nil || req.Params == nil {
		return
	}
	v, ok := s.progress.Load(fmt.Sprint(req.Params.ProgressToken))
	if !ok {
		return
	}
	sink := v.(*progressSink)
	sink.touch()
	if sink.recorded.Add(1) <= maxProgressEvents {
		s.emit(events.KindUpstreamNotification, sink.rec.req, sink.rec.op, events.OK, "", zeroTime, events.A("method", "notifications/progress", "progress", fmt.Sprint(req.Params.Progress), "total", fmt.Sprint(req.Params.Total), "message", req.Params.Message))
	}
	sink.forward(req.Params.Progress, req.Params.Total, req.Params.Message)
}
