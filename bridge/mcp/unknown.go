package mcp

import (
	"context"
	"encoding/json"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// unknownTools answers a call of a tool the catalog does not have with the
// executor's UnknownTool result (a tool error the model can read), instead
// of the SDK's protocol error.
func (s *Server) unknownTools(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		call, ok := req.(*sdk.CallToolRequest)
		if !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		if t, known := s.opts.Executor.Catalog().Lookup(call.Params.Name); known && !t.Held {
			return next(ctx, method, req)
		} else if known { // held by the guard: never listed, so the SDK does not know it; the executor says why
			return typed(call)(s.handle(ctx, call))
		}
		var id events.ID
		if ex := call.GetExtra(); ex != nil && ex.Header != nil {
			id, _ = events.ParseID(ex.Header.Get(hdrRequestID))
		}
		switch { // an upstream's tool before any tools/list: find its server first
		case s.opts.BeforeCall != nil:
			s.opts.BeforeCall(ctx, id, call.Params.Name)
		case s.opts.BeforeList != nil:
			s.opts.BeforeList(ctx, id, method)
		}
		return typed(call)(s.handle(ctx, call))
	}
}

// typed returns what answers call outside the SDK's own tool dispatch
// with the resultType a client on the new protocol reads (complete, or
// input_required when it asks for input), as that dispatch would set it.
func typed(call *sdk.CallToolRequest) func(*sdk.CallToolResult, error) (sdk.Result, error) {
	return func(res *sdk.CallToolResult, err error) (sdk.Result, error) {
		if err != nil || res == nil {
			return res, err
		}
		ss := call.Session
		if ss == nil || ss.InitializeParams() == nil || ss.InitializeParams().ProtocolVersion < newProtocol {
			return res, nil
		}
		b, err := json.Marshal(res)
		if err != nil {
			return res, nil
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil {
			return res, nil
		}
		kind := `"complete"`
		if len(res.InputRequests) > 0 {
			kind = `"input_required"`
		}
		m["resultType"] = json.RawMessage(kind)
		b, _ = json.Marshal(m)
		var out sdk.CallToolResult // the SDK keeps resultType to itself: it reads it off the wire
		if json.Unmarshal(b, &out) != nil {
			return res, nil
		}
		return &out, nil
	}
}

// newProtocol is the first protocol version without sessions, whose
// results say their resultType.
const newProtocol = "2026-07-28"
