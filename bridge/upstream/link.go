//lint:file-ignore SA1019 sampling, elicitation's relay, roots and logging are deprecated in 2026-07-28 but in their window: the gateway relays what clients and servers still speak (issue 25)

package upstream

import (
	"context"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
	people "github.com/tracebridge/tracebridge/identity"
)

// Downstream is a client session of the bridge as the gateway relays to
// it (bridge/mcp's sessions): what an upstream asks of the client
// (sampling, elicitation, roots) and tells it (log messages) goes to the
// session whose link it came on, or whose call it belongs to, and no other.
type Downstream interface {
	executor.Client
	// Capabilities are those the client declared at initialize (nil:
	// none yet); ProtocolVersion the version it asked for ("": none, as
	// on 2026-07-28, which has no initialize).
	Capabilities() *sdk.ClientCapabilities
	ProtocolVersion() string
	Roots(ctx context.Context) ([]*sdk.Root, error)
	CreateMessage(ctx context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error)
	CreateMessageWithTools(ctx context.Context, p *sdk.CreateMessageWithToolsParams) (*sdk.CreateMessageWithToolsResult, error)
	Elicit(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error)
	Log(ctx context.Context, p *sdk.LoggingMessageParams)
	ResourceUpdated(ctx context.Context, p *sdk.ResourceUpdatedNotificationParams)
	// LogLevel is the level the client asked for ("" when it set none).
	LogLevel() string
	// Related marks ctx so that what is sent to the client with it belongs
	// to request req (an HTTP client receives it on that request's stream).
	Related(ctx context.Context, req events.ID) context.Context
}

// downstreamOf is the client session of ctx, nil when there is none or it
// cannot be relayed to.
func downstreamOf(ctx context.Context) Downstream {
	d, _ := executor.ClientOf(ctx).(Downstream)
	return d
}

// link is one MCP session with the upstream. With sessions = "per-client"
// (the default) each client session of the bridge has its own, which
// declares that client's capabilities and roots; the link of key "" is
// shared (sessions = "shared", and the listing done with no client, as
// for start = "eager").
type link struct {
	s     *Server
	key   string
	owner Downstream // nil for the shared link
	// version is the protocol version the link asks for ("": the SDK's
	// newest); the upstream may answer with an older one.
	version string
	// user is whose own grant the link calls with (per_user); zero: the
	// server's.
	user people.User
	sess *sdk.ClientSession
	conn *evidenceConn
	proc *process
	// client is the go-sdk client (its roots are the owner's).
	client *sdk.Client
	subs   subscriptions
	order  order         // its notifications read and handled
	roots  []string      // the owner's roots as last given to client (under mu)
	oauth  *grantHandler // a url server's OAuth, when it has one
	tls    *tlsPin       // an https server's key, checked in the handshake
	// asked are the owner's roots as asked when its server was started
	// confined (rootsAsked): its client is given the same.
	asked      []*sdk.Root
	rootsAsked bool

	mu    sync.Mutex
	calls []inflight // requests in flight on this link, oldest first
}

// inflight is a request sent on a link and the client session it came from.
type inflight struct {
	req, op events.ID
	from    Downstream
}

// begin notes a request in flight; the returned func ends it.
func (l *link) begin(req, op events.ID, from Downstream) func() {
	c := inflight{req: req, op: op, from: from}
	l.mu.Lock()
	l.calls = append(l.calls, c)
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if i := slices.Index(l.calls, c); i >= 0 {
			l.calls = slices.Delete(l.calls, i, i+1)
		}
	}
}

// target is where what the upstream asks or tells now goes: the latest
// request in flight on the link (its request ids, its client), else the
// link's owner with no request. nil: no client to tell (a request the
// bridge itself sent still names the request, so what the upstream asked
// is recorded under it).
func (l *link) target() (Downstream, events.ID, events.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.calls) - 1; i >= 0; i-- {
		c := l.calls[i]
		if l.owner == nil || c.from == l.owner {
			return c.from, c.req, c.op
		}
	}
	return l.owner, events.ID{}, events.ID{}
}

// newProtocol is the first protocol version without sessions: per-request
// _meta, and a server's questions to the client as input requests in its
// result (multi-round-trip) instead of requests of its own.
const newProtocol = "2026-07-28"

// sharedNewKey is the key of the shared link of clients on newProtocol.
const sharedNewKey = "@" + newProtocol

// keyOf is the link a request from ctx's client goes on and the protocol
// version that link speaks: the client's own link at the client's version;
// else a shared one, of the new protocol for a client on it (its questions
// come back to that client as input requests), of sharedProtocol for the
// rest.
func (s *Server) keyOf(ctx context.Context) (string, Downstream, string) {
	d := downstreamOf(ctx)
	if u := s.userOf(ctx); !u.IsZero() && s.cfg.Shared() {
		// Each user's own grant: a link of theirs, shared by their sessions.
		version := sharedProtocol
		if d != nil && d.ProtocolVersion() >= newProtocol {
			version = newProtocol
		}
		return "user:" + u.Key() + "@" + version, nil, version
	}
	if !s.cfg.Shared() && d != nil && d.Key() != "" {
		return d.Key(), d, d.ProtocolVersion()
	}
	if d != nil && d.ProtocolVersion() >= newProtocol {
		return sharedNewKey, nil, newProtocol
	}
	return "", nil, sharedProtocol // the shared link: what it is asked goes to the caller in flight
}

// userOf is the user whose own grant ctx's calls use: with per_user, the
// one the front door authenticated; else no one.
func (s *Server) userOf(ctx context.Context) people.User {
	if s.cfg.OAuth == nil || !s.cfg.OAuth.PerUser {
		return people.User{}
	}
	u, _ := people.From(ctx)
	return u
}

// Release ends the links the client session key owned (the session ended).
func (g *Gateway) Release(key string) {
	if key == "" {
		return
	}
	for _, s := range g.servers {
		s.mu.Lock()
		l := s.links[key]
		delete(s.links, key)
		s.mu.Unlock()
		if l != nil {
			l.close() // before the bridge may exit: its process ends with it
		}
	}
}

// close ends the link's session and stops its process (an exit the
// bridge asked for, not a crash).
func (l *link) close() {
	if l.proc != nil {
		l.proc.markStopping()
	}
	if l.sess != nil {
		l.sess.Close()
	}
	if l.proc != nil {
		l.proc.stop()
	}
}

// protocolMetaPrefix is the prefix of the protocol's own _meta keys.
const protocolMetaPrefix = "io.modelcontextprotocol/"

// requestMeta adds to meta, for a request of ctx's client on l, what the
// new protocol asks each request to declare: the capabilities the client
// declared on this request, not the link's (the upstream asks it only
// what it can answer). A request without its own (an old client's, on a
// link that had to speak the new protocol) gets the link's from the SDK,
// which are its owner's. On an older protocol there is nothing to add.
func (l *link) requestMeta(ctx context.Context, meta sdk.Meta) sdk.Meta {
	if ir := l.sess.InitializeResult(); ir != nil && ir.ProtocolVersion >= newProtocol {
		if caps := executor.DeclaredOf(ctx); caps != nil {
			meta[sdk.MetaKeyClientCapabilities] = caps
		}
	}
	return meta
}
