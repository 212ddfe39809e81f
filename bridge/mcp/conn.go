package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// MetaRequestID is the _meta key of every tools/call result that names the
// request id to replay.
const MetaRequestID = "tracebridge/requestId"

// Headers of RequestExtra that carry ids from the connection to handlers
// (the SDK does not expose JSON-RPC ids to them).
const (
	hdrRequestID   = "Tracebridge-Request-Id"
	hdrSessionID   = "Tracebridge-Session-Id"
	hdrTraceparent = "Traceparent"
	hdrTransport   = "Tracebridge-Transport" // pipe (stdio) or tcp (the HTTP front door)
)

// evidenceTransport wraps a transport so its connection leaves evidence.
type evidenceTransport struct {
	inner sdk.Transport
	c     *connState
}

func (t *evidenceTransport) Connect(ctx context.Context) (sdk.Connection, error) {
	conn, err := t.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.c.inner = conn
	return t.c, nil
}

// connState is the evidence connection of one session.
type connState struct {
	inner        sdk.Connection
	rec          events.Recorder
	log          *slog.Logger
	session      events.ID
	flushTimeout time.Duration
	now          func() time.Time
	// codeOf is the code the handler gave request req's result.
	codeOf func(req events.ID) (events.Code, bool)
	// related, when set, hears of each request sent to the client that
	// belongs to a request in flight (Related).
	related RelatedFunc
	// poll, when set, hears that a call's server ended its stream before
	// answering (withPoll).
	poll PollFunc

	// transport is how the client reaches this session, as the OTel
	// conventions name it: "pipe" (stdio) or "tcp" (Streamable HTTP).
	transport string
	// user is who the door authenticated (identity.User's attributes;
	// none over stdio or with the data dir's token), tagged on each
	// request's events by tags.
	user []string
	tags tagger

	mu       sync.Mutex
	inflight map[string]*pending // JSON-RPC id → request
	client   string              // name/version from initialize
	protocol string              // the protocol version the client asked for at initialize
	ended    bool
	refused  int // bytes of refused calls' params recorded whole (refused.go)
}

// tagger adds attributes to every event of a request (events.Emitter).
type tagger interface {
	Tag(id events.ID, kv ...string)
	Untag(id events.ID)
}

func (c *connState) tag(req events.ID) {
	if c.user != nil {
		c.tags.Tag(req, c.user...)
	}
}

func (c *connState) untag(req events.ID) {
	if c.user != nil {
		c.tags.Untag(req)
	}
}

// untagRequests ends the tags of requests never answered.
func (c *connState) untagRequests() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pd := range c.inflight {
		c.untag(pd.req)
	}
}

type pending struct {
	id     jsonrpc.ID
	req    events.ID
	method string
	tool   string
	tp     string
	start  time.Time
	params string
}

func idKey(id jsonrpc.ID) string { return fmt.Sprintf("%T:%v", id.Raw(), id.Raw()) }

func (c *connState) SessionID() string { return c.inner.SessionID() }

func (c *connState) Close() error { return c.inner.Close() }

// Read records what arrives and tags requests with their request id. A
// request whose id is already in flight is refused here: answering both
// under one id would give one caller the other's result.
func (c *connState) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.inner.Read(ctx)
		if err != nil {
			// Stdin closed, or a line that cannot be read ends the
			// session: first answer what was read before it.
			c.drain(ctx)
			c.endSession(err)
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil // a response to a server→client request
		}
		if req.ID.IsValid() {
			c.mu.Lock()
			dup := c.inflight[idKey(req.ID)] != nil
			c.mu.Unlock()
			if dup {
				c.refuse(ctx, req, fmt.Sprintf("request id %v is already in flight: wait for its answer or use another id", req.ID.Raw()))
				continue
			}
		}
		return c.received(req), nil
	}
}

// drainLimit bounds how long a closed stdin waits for the answers of the
// requests read before it.
const drainLimit = 5 * time.Minute

// drain waits until every request read so far is answered: a client that
// sends its requests and closes stdin still gets every answer (and each
// answer's events are durable, as Write makes them).
func (c *connState) drain(ctx context.Context) {
	deadline := time.Now().Add(drainLimit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		c.mu.Lock()
		n := len(c.inflight)
		c.mu.Unlock()
		if n == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// refuse answers req with an Invalid Request error and records both sides.
func (c *connState) refuse(ctx context.Context, req *jsonrpc.Request, msg string) {
	id, _ := json.Marshal(req.ID.Raw())
	reqID := c.record(id, req.Method, msg)
	c.inner.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: msg}})
	c.flushed(reqID)
}

// refuseRaw answers a request the SDK never saw, echoing its id exactly.
func (c *connState) refuseRaw(w io.Writer, id json.RawMessage, method, msg string) {
	reqID := c.record(id, method, msg)
	m, _ := json.Marshal(msg)
	c.flushed(reqID)
	w.Write([]byte(`{"jsonrpc":"2.0","id":` + string(id) + `,"error":{"code":-32600,"message":` + string(m) + "}}\n"))
}

// record emits a refused request's two events.
func (c *connState) record(id json.RawMessage, method, msg string) events.ID {
	reqID := c.rec.NewID()
	attrs := map[string]string{"method": method, "jsonrpcId": truncate(string(id), 64)}
	c.rec.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: reqID, SessionID: c.session, Outcome: events.Error,
		Code: events.CodeInvalidRequest, Attrs: events.AttrsOf(attrs)})
	c.rec.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: reqID, SessionID: c.session, Outcome: events.Error,
		Code: events.CodeInvalidRequest, Attrs: events.A("method", method, "jsonrpcId", attrs["jsonrpcId"], "error", msg)})
	return reqID
}

func (c *connState) flushed(req events.ID) {
	fctx, cancel := context.WithTimeout(context.Background(), c.flushTimeout)
	defer cancel()
	if err := c.rec.Flush(fctx, req); err != nil {
		c.log.Error("a refused request's events are not durable", "request", req, "err", err)
	}
}

// received records a request and tags it with its request id.
func (c *connState) received(req *jsonrpc.Request) jsonrpc.Message {
	var p struct {
		Meta struct {
			Traceparent string `json:"traceparent"`
		} `json:"_meta"`
		Name            string `json:"name"`
		RequestID       any    `json:"requestId"`
		ProtocolVersion string `json:"protocolVersion"`
		ClientInfo      *struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		} `json:"clientInfo"`
	}
	json.Unmarshal(req.Params, &p) // params that do not decode are the SDK's to refuse
	tp := ""
	if events.ValidTraceparent(p.Meta.Traceparent) {
		tp = p.Meta.Traceparent
	}
	attrs := map[string]string{"method": req.Method}
	if !req.ID.IsValid() { // a notification
		e := events.Event{Kind: events.KindMCPNotificationReceived, SessionID: c.session, Traceparent: tp, Outcome: events.OK}
		if req.Method == "notifications/cancelled" && p.RequestID != nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				c.mu.Lock()
				if pd := c.inflight[idKey(id)]; pd != nil {
					e.RequestID = pd.req
				}
				c.mu.Unlock()
				attrs["jsonrpcId"] = fmt.Sprint(id.Raw())
			}
		}
		e.Attrs = events.AttrsOf(attrs)
		c.rec.Emit(e)
		return req
	}
	reqID := c.rec.NewID()
	attrs["jsonrpcId"] = fmt.Sprint(req.ID.Raw())
	if req.Method == "tools/call" {
		attrs["tool"] = p.Name
	}
	c.mu.Lock()
	if p.ClientInfo != nil {
		c.client = strings.TrimSpace(p.ClientInfo.Name + "/" + p.ClientInfo.Version)
		c.protocol = p.ProtocolVersion
	}
	attrs[events.AttrClient] = c.client
	if c.protocol != "" {
		attrs["protocolVersion"] = c.protocol
	}
	if c.transport != "" {
		attrs["transport"] = c.transport
	}
	c.inflight[idKey(req.ID)] = &pending{id: req.ID, req: reqID, method: req.Method, tool: p.Name, tp: tp, start: c.now(), params: string(req.Params)}
	c.mu.Unlock()
	c.tag(reqID) // events of the request that carry no session id (the upstream hop's) name the user too
	c.rec.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: reqID, SessionID: c.session, Traceparent: tp, Outcome: events.OK, Attrs: events.AttrsOf(attrs)})
	req.Extra = &sdk.RequestExtra{Header: http.Header{
		hdrRequestID: {reqID.String()}, hdrSessionID: {c.session.String()}, hdrTraceparent: {tp}, hdrTransport: {c.transport},
	}}
	return req
}

// endSession records why reading stopped: the client closed stdin, or a
// line could not be read.
func (c *connState) endSession(err error) {
	c.mu.Lock()
	if c.ended {
		c.mu.Unlock()
		return
	}
	c.ended = true
	c.mu.Unlock()
	e := events.Event{Kind: events.KindMCPSessionEnded, SessionID: c.session, Outcome: events.OK}
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, context.Canceled):
	case errors.Is(err, errLineTooLong):
		e.Kind, e.Outcome, e.Code = events.KindMCPSessionAborted, events.Error, events.CodeTooLarge
		e.Attrs = events.A("error", err.Error())
	default:
		e.Kind, e.Outcome, e.Code = events.KindMCPSessionAborted, events.Error, events.CodeMalformedFrame
		e.Attrs = events.A("error", truncate(err.Error(), 300))
	}
	if e.Code != "" {
		c.log.Error("MCP session aborted: the client sent a line that cannot be read", "code", e.Code, "err", err)
	}
	c.rec.Emit(e)
}

// Write records a response and sends it once the request's events are
// durable.
func (c *connState) Write(ctx context.Context, msg jsonrpc.Message) error {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		if r, isReq := msg.(*jsonrpc.Request); isReq && r.ID.IsValid() && c.related != nil {
			c.relate(ctx, r.ID)
		}
		return c.inner.Write(ctx, msg)
	}
	c.mu.Lock()
	pd := c.inflight[idKey(resp.ID)]
	delete(c.inflight, idKey(resp.ID))
	c.mu.Unlock()
	if pd == nil {
		return c.inner.Write(ctx, msg)
	}
	defer c.untag(pd.req)
	attrs := map[string]string{"method": pd.method, "jsonrpcId": fmt.Sprint(resp.ID.Raw())}
	if pd.params != "" {
		// The request's params, for a recorded session to re-send. Recorded
		// with the response, not the request: by now every secret the call
		// resolved is known to the redactor.
		attrs["params"] = pd.params
	}
	e := events.Event{Kind: events.KindMCPResponseSent, RequestID: pd.req, SessionID: c.session, Traceparent: pd.tp,
		Outcome: events.OK, DurationMs: events.Ms(c.now().Sub(pd.start))}
	if pd.tool != "" {
		attrs["tool"] = pd.tool
	}
	switch {
	case resp.Error != nil:
		e.Outcome = events.Error
		attrs["error"] = truncate(resp.Error.Error(), 300)
	case pd.method == "tools/call":
		var isError bool
		resp.Result, isError = tagResult(resp.Result, pd.req)
		code, ok := c.codeOf(pd.req)
		if !ok && isError {
			// The SDK answered without calling the handler: its own tool
			// errors are arguments that fail the input schema.
			code = events.CodeInvalidArguments
		}
		if code != "" {
			e.Outcome, e.Code = events.OutcomeOf(code), code
		}
		if refusedBeforeRun(code) && pd.params != "" {
			c.mu.Lock()
			params, whole := refusedParams(pd.params, pd.tool, c.refused)
			if whole {
				c.refused += len(params)
			}
			c.mu.Unlock()
			attrs["params"] = params
		}
	}
	attrs["answer"] = answerOf(resp)
	e.Attrs = events.AttrsOf(attrs)
	c.rec.Emit(e)
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.flushTimeout)
	defer cancel()
	if err := c.rec.Flush(fctx, pd.req); err != nil {
		c.log.Error("the request's events are not durable; answering anyway (the executor refused anything that needed them)", "request", pd.req, "err", err)
	}
	return c.inner.Write(ctx, resp)
}

// relate tells the related hook that request out, sent to the client with
// ctx, belongs to the client's request ctx was marked with (Related).
func (c *connState) relate(ctx context.Context, out jsonrpc.ID) {
	req, ok := ctx.Value(relatedKey{}).(events.ID)
	if !ok {
		return
	}
	if in := c.jsonrpcID(req); in != nil {
		o, _ := json.Marshal(out.Raw())
		c.related(o, in)
	}
}

// jsonrpcID is the JSON-RPC id, as JSON, of request req in flight (nil:
// none is).
func (c *connState) jsonrpcID(req events.ID) json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pd := range c.inflight {
		if pd.req == req {
			b, _ := json.Marshal(pd.id.Raw())
			return b
		}
	}
	return nil
}

// polled tells the poll hook that the server of request req (its events
// id) ended its stream before answering; the channel is closed when the
// client came back for the answer.
func (c *connState) polled(req events.ID, retry time.Duration) <-chan struct{} {
	in := c.jsonrpcID(req)
	if in == nil {
		return nil
	}
	return c.poll(in, req, retry)
}

// tagResultDecoded is tagResult by decoding the result and encoding it
// again: for what the splice is not sure of.
func tagResultDecoded(raw json.RawMessage, req events.ID) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return raw, false
	}
	meta := map[string]any{}
	if b, ok := m["_meta"]; ok {
		json.Unmarshal(b, &meta)
	}
	meta[MetaRequestID] = req.String()
	m["_meta"], _ = json.Marshal(meta)
	isError := string(m["isError"]) == "true"
	out, err := json.Marshal(m)
	if err != nil {
		return raw, isError
	}
	return out, isError
}

// answerOf is what the client is answered, for the evidence and for a
// re-drive to compare: {"result": …} or {"error": {"code", "message"}}.
// A long one is kept whole by the emitter's payload store.
func answerOf(resp *jsonrpc.Response) string {
	var b []byte
	if resp.Error != nil {
		var e struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		}
		e.Message = resp.Error.Error() // as the SDK writes it
		var we *jsonrpc.Error
		if errors.As(resp.Error, &we) {
			e.Code = we.Code
		}
		b, _ = json.Marshal(map[string]any{"error": e})
	} else {
		b, _ = json.Marshal(map[string]json.RawMessage{"result": resp.Result})
	}
	return string(b)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
