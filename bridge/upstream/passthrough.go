package upstream

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// extras are a server's prompts and resources as last listed. Prompts are
// exposed as server__prompt (ToolName's rule); resources and templates keep
// their URIs, and a read goes to the server that listed the URI.
type extras struct {
	prompts   []*sdk.Prompt // exposed names
	resources []*sdk.Resource
	templates []*sdk.ResourceTemplate
	upstream  map[string]string // exposed prompt name → the server's own
}

// listExtras lists what the server offers besides tools; a server without
// the capability is not asked. s.mu is held.
func (s *Server) listExtrasLocked(ctx context.Context) error {
	ex := extras{upstream: map[string]string{}}
	caps := &sdk.ServerCapabilities{}
	if ir := s.sess.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	if caps.Prompts != nil {
		for p, err := range s.sess.Prompts(ctx, nil) {
			if err != nil {
				return err
			}
			exposed := *p
			exposed.Name = ToolName(s.name, p.Name)
			ex.upstream[exposed.Name] = p.Name
			ex.prompts = append(ex.prompts, &exposed)
		}
	}
	if caps.Resources != nil {
		for r, err := range s.sess.Resources(ctx, nil) {
			if err != nil {
				return err
			}
			ex.resources = append(ex.resources, r)
		}
		for t, err := range s.sess.ResourceTemplates(ctx, nil) {
			if err != nil {
				return err
			}
			ex.templates = append(ex.templates, t)
		}
	}
	s.extras.Store(&ex)
	return nil
}

// offers is what the server last listed besides tools.
func (s *Server) offers() *extras {
	if ex := s.extras.Load(); ex != nil {
		return ex
	}
	return &extras{}
}

// Prompts are every server's prompts, by exposed name.
func (g *Gateway) Prompts() []*sdk.Prompt {
	var out []*sdk.Prompt
	for _, name := range g.names {
		out = append(out, g.servers[name].offers().prompts...)
	}
	return out
}

// Resources are every server's resources; a URI two servers list is the
// first one's (in name order).
func (g *Gateway) Resources() []*sdk.Resource {
	seen := map[string]bool{}
	var out []*sdk.Resource
	for _, name := range g.names {
		for _, r := range g.servers[name].offers().resources {
			if !seen[r.URI] {
				seen[r.URI] = true
				out = append(out, r)
			}
		}
	}
	return out
}

// ResourceTemplates are every server's resource templates.
func (g *Gateway) ResourceTemplates() []*sdk.ResourceTemplate {
	seen := map[string]bool{}
	var out []*sdk.ResourceTemplate
	for _, name := range g.names {
		for _, t := range g.servers[name].offers().templates {
			if !seen[t.URITemplate] {
				seen[t.URITemplate] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// GetPrompt fetches an exposed prompt from its server, recorded as the
// upstream hop of request req.
func (g *Gateway) GetPrompt(ctx context.Context, req events.ID, name string, args map[string]string) (*sdk.GetPromptResult, error) {
	for _, sname := range g.names {
		s := g.servers[sname]
		if own, ok := s.offers().upstream[name]; ok {
			var res *sdk.GetPromptResult
			err := s.roundTrip(ctx, req, "prompts/get "+own, func(ctx context.Context, cs *sdk.ClientSession) (err error) {
				res, err = cs.GetPrompt(ctx, &sdk.GetPromptParams{Name: own, Arguments: args})
				return err
			})
			return res, err
		}
	}
	return nil, fmt.Errorf("no upstream server offers prompt %q", name)
}

// ReadResource reads uri from the server that listed it (or whose template
// it fits), recorded as the upstream hop of request req.
func (g *Gateway) ReadResource(ctx context.Context, req events.ID, uri string) (*sdk.ReadResourceResult, error) {
	s := g.resourceServer(uri)
	if s == nil {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	var res *sdk.ReadResourceResult
	err := s.roundTrip(ctx, req, "resources/read "+uri, func(ctx context.Context, cs *sdk.ClientSession) (err error) {
		res, err = cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: uri})
		return err
	})
	return res, err
}

// resourceServer is the server that listed uri, else the one with the
// longest template prefix (the part before its first variable) it fits.
func (g *Gateway) resourceServer(uri string) *Server {
	var best *Server
	bestLen := -1
	for _, name := range g.names {
		s := g.servers[name]
		ex := s.offers()
		for _, r := range ex.resources {
			if r.URI == uri {
				return s
			}
		}
		for _, t := range ex.templates {
			prefix, _, _ := strings.Cut(t.URITemplate, "{")
			if strings.HasPrefix(uri, prefix) && len(prefix) > bestLen {
				best, bestLen = s, len(prefix)
			}
		}
	}
	return best
}

// roundTrip sends one request other than a tool call to the upstream,
// recorded as upstream.request.sent (by the connection) and its answer or
// failure, under request req.
func (s *Server) roundTrip(ctx context.Context, req events.ID, what string, do func(context.Context, *sdk.ClientSession) error) error {
	cs, err := s.session(ctx, req, events.ID{})
	if err != nil {
		return err
	}
	rec := &callRec{req: req, tool: what}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, rec), s.cfg.RequestTimeout())
	defer cancel()
	t0 := s.g.opts.Now()
	if err := do(cctx, cs); err != nil {
		return s.failed(ctx, cctx, err, rec, what, t0, map[string]string{"rpcId": rec.rpcID, projections.AttrUpTool: what})
	}
	s.emit(events.KindUpstreamResponse, req, events.ID{}, events.OK, "", t0, map[string]string{"rpcId": rec.rpcID, projections.AttrUpTool: what})
	return nil
}
