package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
// the capability is not asked. Each list stands on its own: one the server
// fails (an optional method it lacks) leaves the others listed. What it
// listed is recorded (upstream.offers.listed, as the server named them),
// for a re-drive to list the same. s.mu is held.
func (s *Server) listExtrasLocked(ctx context.Context, req events.ID, cs *sdk.ClientSession) error {
	ex := extras{upstream: map[string]string{}}
	caps := &sdk.ServerCapabilities{}
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		caps = ir.Capabilities
	}
	var errs []error
	var listed []*sdk.Prompt
	if caps.Prompts != nil {
		ps, err := collect(cs.Prompts(ctx, nil))
		listed = ps
		for _, p := range ps {
			exposed := *p
			exposed.Name = s.exposed(p.Name)
			ex.upstream[exposed.Name] = p.Name
			ex.prompts = append(ex.prompts, &exposed)
		}
		errs = append(errs, listErr("prompts/list", err))
	}
	if caps.Resources != nil {
		var err error
		ex.resources, err = collect(cs.Resources(ctx, nil))
		errs = append(errs, listErr("resources/list", err))
		ex.templates, err = collect(cs.ResourceTemplates(ctx, nil))
		errs = append(errs, listErr("resources/templates/list", err))
	}
	s.extras.Store(&ex)
	if caps.Prompts != nil || caps.Resources != nil {
		attrs := events.Attrs(nil)
		for name, v := range map[string]any{"prompts": listed, "resources": ex.resources, "templates": ex.templates} {
			if b, err := json.Marshal(v); err == nil && string(b) != "null" {
				attrs.Set(name, string(b))
			}
		}
		s.emit(events.KindUpstreamOffers, req, events.ID{}, events.OK, "", zeroTime, attrs)
	}
	return errors.Join(errs...)
}

// collect is what a listing yielded until it ended or failed.
func collect[T any](seq iter.Seq2[T, error]) ([]T, error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}

func listErr(method string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w", method, err)
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

// Resources are the servers' resources that one server alone lists and
// that are not the bridge's own (Options.Reserved): a URI two servers
// list is served by neither (a read of it is refused as ambiguous), so no
// server ever receives reads for a URI another listed.
func (g *Gateway) Resources() []*sdk.Resource {
	owners := g.uriOwners()
	var out []*sdk.Resource
	for _, name := range g.names {
		for _, r := range g.servers[name].offers().resources {
			if o := owners[r.URI]; len(o) == 1 && o[0] == name && !g.reserved(r.URI) {
				out = append(out, r)
			}
		}
	}
	return out
}

// ResourceTemplates are the servers' templates that do not overlap the
// bridge's own (Options.Reserved) or another server's template: two
// templates whose fixed prefixes (before the first variable) are one a
// prefix of the other could both fit a URI, and neither is served.
func (g *Gateway) ResourceTemplates() []*sdk.ResourceTemplate {
	var out []*sdk.ResourceTemplate
	for _, name := range g.names {
		for _, t := range g.servers[name].offers().templates {
			if len(g.templateOwners(templatePrefix(t.URITemplate))) == 1 && !g.reserved(templatePrefix(t.URITemplate)) {
				out = append(out, t)
			}
		}
	}
	return out
}

// reserved reports whether a URI (or a template's prefix) overlaps what
// the bridge serves itself.
func (g *Gateway) reserved(uri string) bool {
	for _, r := range g.opts.Reserved {
		if strings.HasPrefix(uri, r) || strings.HasPrefix(r, uri) {
			return true
		}
	}
	return false
}

func templatePrefix(t string) string {
	prefix, _, _ := strings.Cut(t, "{")
	return prefix
}

// uriOwners is which servers list each resource URI exactly.
func (g *Gateway) uriOwners() map[string][]string {
	out := map[string][]string{}
	for _, name := range g.names {
		for _, r := range g.servers[name].offers().resources {
			if !slices.Contains(out[r.URI], name) {
				out[r.URI] = append(out[r.URI], name)
			}
		}
	}
	return out
}

// templateOwners is which servers have a template whose prefix overlaps
// prefix (one is a prefix of the other).
func (g *Gateway) templateOwners(prefix string) []string {
	var out []string
	for _, name := range g.names {
		for _, t := range g.servers[name].offers().templates {
			p := templatePrefix(t.URITemplate)
			if (strings.HasPrefix(p, prefix) || strings.HasPrefix(prefix, p)) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// recordConflicts records, once each, the resources and templates not
// served because they collide with the bridge's own or another server's.
func (g *Gateway) recordConflicts() {
	refuse := func(key, what, reason string, servers []string) {
		g.conflictsMu.Lock()
		seen := g.conflicts[key]
		g.conflicts[key] = true
		g.conflictsMu.Unlock()
		if seen {
			return
		}
		g.opts.Emitter.Emit(events.Event{Kind: events.KindUpstreamOfferRefused, Outcome: events.Denied, Code: events.CodeAmbiguous,
			Attrs: events.A("offer", what, events.AttrServer, strings.Join(servers, ","), events.AttrReason, reason)})
		g.opts.Logger.Warn("upstream resource not served", "offer", what, "servers", servers, "reason", reason)
	}
	for uri, o := range g.uriOwners() {
		switch {
		case g.reserved(uri):
			refuse("r "+uri, uri, "the bridge serves this URI itself", o)
		case len(o) > 1:
			refuse("r "+uri, uri, "several servers list this URI: none is sent its reads", o)
		}
	}
	for _, name := range g.names {
		for _, t := range g.servers[name].offers().templates {
			p := templatePrefix(t.URITemplate)
			switch o := g.templateOwners(p); {
			case g.reserved(p):
				refuse("t "+t.URITemplate, t.URITemplate, "it overlaps the bridge's own resources", []string{name})
			case len(o) > 1:
				refuse("t "+t.URITemplate, t.URITemplate, "it overlaps another server's template: neither is sent reads that both fit", o)
			}
		}
	}
}

// GetPrompt fetches an exposed prompt from its server, recorded as the
// upstream hop of request req.
func (g *Gateway) GetPrompt(ctx context.Context, req events.ID, p *sdk.GetPromptParams) (*sdk.GetPromptResult, error) {
	name := p.Name
	for _, sname := range g.names {
		s := g.servers[sname]
		if own, ok := s.offers().upstream[name]; ok {
			if err := g.authorize(ctx, req, name, s); err != nil {
				return nil, err
			}
			var res *sdk.GetPromptResult
			params := &sdk.GetPromptParams{Name: own, Arguments: p.Arguments, InputResponses: p.InputResponses, RequestState: p.RequestState}
			err := s.roundTrip(ctx, req, "prompts/get "+own, params, func(ctx context.Context, l *link, meta sdk.Meta) (_ any, err error) {
				params.Meta = meta
				res, err = l.sess.GetPrompt(ctx, params)
				return res, err
			})
			return res, err
		}
	}
	return nil, fmt.Errorf("no upstream server offers prompt %q", name)
}

// ReadResource reads uri from the one server that listed it, else the one
// server whose template fits it, recorded as the upstream hop of request
// req. A URI the bridge serves itself, or that several servers claim, is
// refused.
func (g *Gateway) ReadResource(ctx context.Context, req events.ID, p *sdk.ReadResourceParams) (*sdk.ReadResourceResult, error) {
	uri := p.URI
	s, err := g.resourceServer(uri)
	if err != nil {
		return nil, err
	}
	if err := g.authorize(ctx, req, uri, s); err != nil {
		return nil, err
	}
	var res *sdk.ReadResourceResult
	params := &sdk.ReadResourceParams{URI: uri, InputResponses: p.InputResponses, RequestState: p.RequestState}
	err = s.roundTrip(ctx, req, "resources/read "+uri, params, func(ctx context.Context, l *link, meta sdk.Meta) (_ any, err error) {
		params.Meta = meta
		res, err = l.sess.ReadResource(ctx, params)
		return res, err
	})
	return res, err
}

// resourceServer is the server a read of uri goes to: the one that lists
// it exactly, else the one whose template fits it.
func (g *Gateway) resourceServer(uri string) (*Server, error) {
	if g.reserved(uri) {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	switch o := g.uriOwners()[uri]; len(o) {
	case 1:
		return g.servers[o[0]], nil
	case 0:
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s is listed by servers %s: it is read from neither", uri, strings.Join(o, ", "))}
	}
	var fit []string
	for _, name := range g.names {
		for _, t := range g.servers[name].offers().templates {
			if strings.HasPrefix(uri, templatePrefix(t.URITemplate)) && !slices.Contains(fit, name) {
				fit = append(fit, name)
			}
		}
	}
	switch len(fit) {
	case 0:
		return nil, sdk.ResourceNotFoundError(uri)
	case 1:
		return g.servers[fit[0]], nil
	}
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("%s fits templates of servers %s: it is read from neither", uri, strings.Join(fit, ", "))}
}

// roundTrip sends one request other than a tool call to the upstream,
// recorded as upstream.request.sent (by the connection) and its answer or
// failure, under request req. The params and the answer do returns are
// recorded whole (redacted by the emitter), as a tool call's are: what a
// recorded session serves again. do puts meta in the request's _meta: a
// traceparent naming this hop's span, in the trace of the client's (ctx's)
// or the request's own, so the upstream's spans are children of the
// bridge's.
func (s *Server) roundTrip(ctx context.Context, req events.ID, what string, params any, do func(context.Context, *link, sdk.Meta) (any, error)) error {
	l, err := s.session(ctx, req, events.ID{})
	if err != nil {
		return err
	}
	defer l.begin(req, events.ID{}, downstreamOf(ctx))()
	rec := &callRec{req: req, tool: what, span: s.g.opts.Emitter.NewID()}
	cctx, cancel := context.WithTimeout(context.WithValue(ctx, callKey{}, rec), s.cfg.RequestTimeout())
	defer cancel()
	attrs := events.A("rpcId", "", projections.AttrUpTool, what)
	record := func(key string, v any) {
		if b, merr := json.Marshal(v); merr == nil {
			attrs.Set(key, string(b))
		}
	}
	record(AttrRequest, params) // as the client asked, before the hop's _meta
	t0 := s.g.opts.Now()
	res, err := do(cctx, l, l.requestMeta(ctx, sdk.Meta{"traceparent": events.Traceparent(events.TraceparentOf(ctx), req, rec.span)}))
	l.order.settle(ctx)
	attrs.Set("rpcId", rec.rpcID)
	if err != nil {
		return s.failed(ctx, cctx, err, l, rec, what, t0, attrs)
	}
	record(AttrAnswer, res)
	s.emit(events.KindUpstreamResponse, req, events.ID{}, events.OK, "", t0, attrs)
	return nil
}

// authorize asks the policy whether request req may get id from server s,
// which needs the capability its tools need.
func (g *Gateway) authorize(ctx context.Context, req events.ID, id string, s *Server) error {
	if g.opts.Authorize == nil {
		return nil
	}
	return g.opts.Authorize(ctx, req, id, []string{s.cfg.CapabilityOf(s.name)})
}
