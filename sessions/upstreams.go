package sessions

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
)

// RecordedUpstreams stands in for the session's upstream MCP servers: each
// is an in-memory go-sdk server that lists the recorded descriptors and
// answers each tools/call with the next recorded answer for that tool. A
// call whose arguments differ from the recorded request is refused and
// noted as drift: the bridge would have sent the upstream something else.
// Nothing is started or dialed.
type RecordedUpstreams struct {
	mu     sync.Mutex
	tools  map[string][]json.RawMessage
	offers map[string]UpstreamOffers
	queue  map[string][]int // server/tool → indexes of its upstream steps, in order
	steps  []Step
	drift  []Drift
}

// newRecordedUpstreams reads s's upstream steps.
func newRecordedUpstreams(s *Session) *RecordedUpstreams {
	r := &RecordedUpstreams{tools: s.Header.Upstreams, offers: s.Header.Offers, queue: map[string][]int{}, steps: s.Steps}
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Step == StepUpstream {
			k := st.Server + "/" + st.Command
			r.queue[k] = append(r.queue[k], i)
		}
	}
	return r
}

// Dial connects to the recorded server named server.
func (r *RecordedUpstreams) Dial(ctx context.Context, server string) (sdk.Transport, error) {
	descs, ok := r.tools[server]
	if !ok {
		return nil, fmt.Errorf("the recording has no answers of server %s", server)
	}
	// The SDK's own session chatter (run start, connected, ended) is not
	// the re-drive's to print.
	srv := sdk.NewServer(&sdk.Implementation{Name: "recorded-" + server, Version: "recording"}, &sdk.ServerOptions{Logger: quietSDK})
	for _, d := range descs {
		var t sdk.Tool
		if err := json.Unmarshal(d, &t); err != nil || t.Name == "" {
			continue
		}
		name := t.Name
		if err := guard(func() {
			srv.AddTool(&t, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
				return r.answer(ctx, req.Session, server, name, req.Params.Arguments)
			})
		}); err != nil {
			return nil, fmt.Errorf("recorded tool %s of %s: %v", name, server, err)
		}
	}
	if o, ok := r.offers[server]; ok {
		if err := r.offer(srv, server, o); err != nil {
			return nil, err
		}
	} else {
		r.offerUsed(srv, server)
	}
	ct, st := sdk.NewInMemoryTransports()
	if _, err := srv.Connect(ctx, st, nil); err != nil {
		return nil, err
	}
	return ct, nil
}

// offer lists what the server listed besides tools, as it listed them; a
// read or a get answers with the next recorded answer to it (none
// recorded: an error, and the re-drive drifts).
func (r *RecordedUpstreams) offer(srv *sdk.Server, server string, o UpstreamOffers) error {
	var prompts []*sdk.Prompt
	var resources []*sdk.Resource
	var templates []*sdk.ResourceTemplate
	for _, l := range []struct {
		raw json.RawMessage
		to  any
	}{{o.Prompts, &prompts}, {o.Resources, &resources}, {o.Templates, &templates}} {
		if len(l.raw) > 0 {
			if err := json.Unmarshal(l.raw, l.to); err != nil {
				return fmt.Errorf("what %s listed besides tools: %v", server, err)
			}
		}
	}
	read := func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		var res sdk.ReadResourceResult
		return &res, r.next(server, "resources/read "+req.Params.URI, req.Params, &res)
	}
	for _, p := range prompts {
		if p == nil || p.Name == "" {
			continue
		}
		command := "prompts/get " + p.Name
		srv.AddPrompt(p, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
			var res sdk.GetPromptResult
			return &res, r.next(server, command, req.Params, &res)
		})
	}
	for _, res := range resources {
		if res != nil && res.URI != "" {
			if err := guard(func() { srv.AddResource(res, read) }); err != nil {
				return fmt.Errorf("recorded resource %s of %s: %v", res.URI, server, err)
			}
		}
	}
	for _, t := range templates {
		if t != nil && t.URITemplate != "" {
			if err := guard(func() { srv.AddResourceTemplate(t, read) }); err != nil {
				return fmt.Errorf("recorded resource template %s of %s: %v", t.URITemplate, server, err)
			}
		}
	}
	return nil
}

// guard is f with its panic (a descriptor the SDK refuses) as an error:
// a session file is data.
func guard(f func()) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%v", p)
		}
	}()
	f()
	return nil
}

// offerUsed lists, for a session file without the server's listings, the
// resources it read and the prompts it got, each answering with its next
// recorded answer, so the gateway routes to them as it did to the server.
func (r *RecordedUpstreams) offerUsed(srv *sdk.Server, server string) {
	offered := map[string]bool{}
	for _, st := range r.steps {
		if st.Step != StepUpstream || st.Server != server || offered[st.Command] {
			continue
		}
		offered[st.Command] = true
		command := st.Command
		if uri, ok := strings.CutPrefix(command, "resources/read "); ok {
			srv.AddResource(&sdk.Resource{URI: uri, Name: uri}, func(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
				var res sdk.ReadResourceResult
				return &res, r.next(server, command, req.Params, &res)
			})
		}
		if name, ok := strings.CutPrefix(command, "prompts/get "); ok {
			srv.AddPrompt(&sdk.Prompt{Name: name}, func(ctx context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
				var res sdk.GetPromptResult
				return &res, r.next(server, command, req.Params, &res)
			})
		}
	}
}

// next decodes into res the next recorded answer of server to command
// (resources/read URI, prompts/get NAME), whose params must be the
// recorded ones.
func (r *RecordedUpstreams) next(server, command string, params any, res any) error {
	got, err := json.Marshal(params)
	if err != nil {
		return err
	}
	// _meta is the protocol's (the client's version, capabilities, a
	// progress token), not the request's: the recording has none.
	var m map[string]json.RawMessage
	if json.Unmarshal(got, &m) == nil {
		delete(m, "_meta")
		got, _ = json.Marshal(m)
	}
	st, err := r.take(server, command, got, command+" ")
	if err != nil {
		return err
	}
	if err := json.Unmarshal(st.Result, res); err != nil {
		return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the recorded answer does not decode: " + err.Error()}
	}
	return nil
}

// take pops the next recorded step of server's command, noting drift when
// there is none left or its params differ from got.
func (r *RecordedUpstreams) take(server, command string, got json.RawMessage, label string) (*Step, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := server + "/" + command
	if len(r.queue[k]) == 0 {
		r.drift = append(r.drift, Drift{Step: -1, Label: "upstream " + k, Got: fmt.Sprintf("the bridge asked %s for %s more often than the recording did", server, command)})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "the recording has no more answers for " + k}
	}
	i := r.queue[k][0]
	r.queue[k] = r.queue[k][1:]
	st := &r.steps[i]
	if !sameJSON(got, st.Params) {
		r.drift = append(r.drift, Drift{Step: i, Label: "upstream " + k, Event: 1, Want: label + string(st.Params), Got: label + string(got)})
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "the arguments differ from the recording"}
	}
	return st, nil
}

func (r *RecordedUpstreams) answer(ctx context.Context, ss *sdk.ServerSession, server, tool string, args json.RawMessage) (*sdk.CallToolResult, error) {
	st, err := r.take(server, tool, args, "tools/call "+tool+" ")
	if err != nil {
		return nil, err
	}
	for _, a := range st.Asks {
		r.ask(ctx, ss, server, tool, a)
	}
	var e struct {
		Error *struct {
			Code    int64  `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(st.Result, &e) == nil && e.Error != nil {
		return nil, &jsonrpc.Error{Code: e.Error.Code, Message: e.Error.Message}
	}
	var res sdk.CallToolResult
	if err := json.Unmarshal(st.Result, &res); err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the recorded answer does not decode: " + err.Error()}
	}
	return &res, nil
}

// ask sends the client (through the bridge) what the upstream asked it
// during the recorded call; an answer other than the recorded one is
// drift: the bridge relayed something else.
func (r *RecordedUpstreams) ask(ctx context.Context, ss *sdk.ServerSession, server, tool string, a Ask) {
	var got any
	var err error
	switch a.Method {
	case "sampling/createMessage":
		//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
		var p sdk.CreateMessageParams
		if err = json.Unmarshal(a.Params, &p); err == nil {
			//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
			got, err = ss.CreateMessage(ctx, &p)
		}
	case "elicitation/create":
		var p sdk.ElicitParams
		if err = json.Unmarshal(a.Params, &p); err == nil {
			got, err = ss.Elicit(ctx, &p)
		}
	case "roots/list":
		//lint:ignore SA1019 roots are deprecated in 2026-07-28 but in their window; the gateway relays them
		got, err = ss.ListRoots(ctx, nil)
	default:
		err = fmt.Errorf("the recording asks the client for %s, which a re-drive cannot ask", a.Method)
	}
	var answer []byte
	if err != nil {
		answer, _ = json.Marshal(map[string]any{"error": map[string]any{"code": -32603, "message": err.Error()}})
	} else {
		res, _ := json.Marshal(got)
		answer, _ = json.Marshal(map[string]json.RawMessage{"result": res})
	}
	if at, w, g := answerDiff(string(a.Answer), string(answer)); at != "" && !bothErrors(a.Answer, answer) {
		r.mu.Lock()
		r.drift = append(r.drift, Drift{Step: -1, Label: fmt.Sprintf("upstream %s/%s asked the client for %s", server, tool, a.Method),
			Got: fmt.Sprintf("the answer differs at %s: expected %s, got %s", at, w, g)})
		r.mu.Unlock()
	}
}

// bothErrors: two error answers are the same answer (their messages name
// the process that failed; the crossings compare their codes).
func bothErrors(a, b []byte) bool {
	var x, y struct {
		Error json.RawMessage `json:"error"`
	}
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && x.Error != nil && y.Error != nil
}

// Drift lists the upstream requests that differed from the recording.
func (r *RecordedUpstreams) Drift() []Drift {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Drift(nil), r.drift...)
}

// sameJSON compares two JSON texts by value (key order and spacing aside).
func sameJSON(a, b json.RawMessage) bool {
	if len(a) == 0 {
		a = json.RawMessage("{}")
	}
	if len(b) == 0 {
		b = json.RawMessage("{}")
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// recordedTools stands in for the recorded tools (discovered ones) the
// session called: each answers with its next recorded result, in order.
// Nothing runs.
func recordedTools(s *Session) []*executor.Tool {
	var mu sync.Mutex
	queue := map[string][]json.RawMessage{}
	for i := range s.Steps {
		if st := &s.Steps[i]; st.Step == StepTool {
			queue[st.Command] = append(queue[st.Command], st.Result)
		}
	}
	var out []*executor.Tool
	for id, raw := range s.Header.Tools {
		var d executor.Descriptor
		if json.Unmarshal(raw, &d) != nil || d.ID != id {
			continue
		}
		d.Recorded = true
		out = append(out, &executor.Tool{Descriptor: d, InputSchema: &jsonschema.Schema{Type: "object"},
			Run: func(context.Context, executor.Call) (any, error) {
				mu.Lock()
				defer mu.Unlock()
				if len(queue[id]) == 0 {
					return nil, fmt.Errorf("the recording has no more results of %s", id)
				}
				r := queue[id][0]
				queue[id] = queue[id][1:]
				return r, nil
			}})
	}
	return out
}

// quietSDK discards the go-sdk server's info logs.
var quietSDK = slog.New(slog.NewTextHandler(io.Discard, nil))
