package mcp

import (
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// offeredOnly leaves out of a tools/list answer the tools not offered on
// the protocol version of the client that asked (an upstream's tool that
// exists on another protocol generation only).
func (s *Server) offeredOnly(req sdk.Request, res sdk.Result) {
	lr, ok := res.(*sdk.ListToolsResult)
	ss, _ := req.GetSession().(*sdk.ServerSession)
	if !ok || ss == nil || ss.InitializeParams() == nil {
		return
	}
	v := ss.InitializeParams().ProtocolVersion
	kept := make([]*sdk.Tool, 0, len(lr.Tools))
	for _, t := range lr.Tools {
		if ct, known := s.opts.Executor.Catalog().Lookup(t.Name); known && ct.Offered != nil && !ct.Offered(v) {
			continue
		}
		kept = append(kept, t)
	}
	lr.Tools = kept
}
