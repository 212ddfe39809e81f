package upstream

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// subscriptions are the resource URIs a link subscribed to for its client.
type subscriptions struct {
	mu   sync.Mutex
	uris map[string]bool
}

func (ss *subscriptions) set(uri string, on bool) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.uris == nil {
		ss.uris = map[string]bool{}
	}
	if on {
		ss.uris[uri] = true
	} else {
		delete(ss.uris, uri)
	}
}

func (ss *subscriptions) has(uri string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.uris[uri]
}

// Subscribe subscribes ctx's client session to uri at the server that
// serves it, on that session's link, recorded under request req.
func (g *Gateway) Subscribe(ctx context.Context, req events.ID, uri string) error {
	return g.subscription(ctx, req, uri, true)
}

// Unsubscribe ends that subscription.
func (g *Gateway) Unsubscribe(ctx context.Context, req events.ID, uri string) error {
	return g.subscription(ctx, req, uri, false)
}

func (g *Gateway) subscription(ctx context.Context, req events.ID, uri string, on bool) error {
	s, err := g.resourceServer(uri)
	if err != nil {
		return err
	}
	if err := g.authorize(ctx, req, uri, s); err != nil {
		return err
	}
	method := "resources/unsubscribe"
	if on {
		method = "resources/subscribe"
	}
	var l *link
	err = s.roundTrip(ctx, req, method+" "+uri, map[string]string{"uri": uri}, func(ctx context.Context, ln *link, meta sdk.Meta) (any, error) {
		l = ln
		if on {
			return struct{}{}, ln.sess.Subscribe(ctx, &sdk.SubscribeParams{URI: uri, Meta: meta})
		}
		return struct{}{}, ln.sess.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: uri, Meta: meta})
	})
	if err == nil && l != nil {
		l.subs.set(uri, on)
	}
	return err
}

// onResourceUpdated sends an upstream's notifications/resources/updated to
// the client session that subscribed on this link (the shared link: to
// none; a client there subscribes on its own link).
func (l *link) onResourceUpdated(ctx context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
	if r == nil || r.Params == nil {
		return
	}
	s := l.s
	s.emit(events.KindUpstreamNotification, events.ID{}, events.ID{}, events.OK, "", zeroTime, events.A("method", "notifications/resources/updated", "uri", r.Params.URI))
	if l.owner != nil && l.subs.has(r.Params.URI) {
		l.owner.ResourceUpdated(ctx, r.Params)
	}
}

// Complete answers completion/complete from the server that offers the
// prompt (by exposed name) or the resource template the reference names.
func (g *Gateway) Complete(ctx context.Context, req events.ID, p *sdk.CompleteParams) (*sdk.CompleteResult, error) {
	if p == nil || p.Ref == nil {
		return nil, fmt.Errorf("completion/complete needs a ref")
	}
	for _, name := range g.names {
		s := g.servers[name]
		ref := *p.Ref
		switch ref.Type {
		case "ref/prompt":
			own, ok := s.offers().upstream[ref.Name]
			if !ok {
				continue
			}
			ref.Name = own
		case "ref/resource":
			// The server's own template, and one the gateway serves.
			served := slices.ContainsFunc(g.ResourceTemplates(), func(t *sdk.ResourceTemplate) bool { return t.URITemplate == ref.URI })
			if !served || !s.offersTemplate(ref.URI) {
				continue
			}
		default:
			continue
		}
		if err := g.authorize(ctx, req, ref.Name+ref.URI, s); err != nil {
			return nil, err
		}
		q := *p
		q.Ref = &ref
		var res *sdk.CompleteResult
		err := s.roundTrip(ctx, req, "completion/complete "+ref.Name+ref.URI, &q, func(ctx context.Context, l *link, meta sdk.Meta) (_ any, err error) {
			// The client's _meta goes along but for the protocol's own keys
			// (the link's version and the client's capabilities are the
			// link's to say: requestMeta), its traceparent this hop's.
			sent := q
			sent.Meta = sdk.Meta{}
			for k, v := range q.Meta {
				if !strings.HasPrefix(k, protocolMetaPrefix) {
					sent.Meta[k] = v
				}
			}
			maps.Copy(sent.Meta, meta)
			res, err = l.sess.Complete(ctx, &sent)
			return res, err
		})
		return res, err
	}
	return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: []string{}}}, nil
}

// offersTemplate reports whether the server listed the URI template.
func (s *Server) offersTemplate(tmpl string) bool {
	for _, t := range s.offers().templates {
		if t.URITemplate == tmpl {
			return true
		}
	}
	return false
}
