package upstream

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// identity is what a server is, pinned with its tools (under
// projections.IdentityTool): where it is (a URL's origin, or the command
// as configured), what runs (the executable's SHA-256), what it calls
// itself (serverInfo), and for https the public key of its certificate.
// An empty field is not known yet.
type identity struct {
	Origin     string `json:"origin"`
	Executable string `json:"executableSha256,omitempty"`
	TLSKey     string `json:"tlsPublicKeySha256,omitempty"`
	ServerInfo string `json:"serverInfo,omitempty"`
	// DiscoverInfo is its serverInfo on the new protocol (server/discover's
	// result): a server may name itself differently there.
	DiscoverInfo string `json:"discoverServerInfo,omitempty"`
}

func (id identity) describe() (desc, hash string) {
	b, _ := json.Marshal(id)
	sum := sha256.Sum256(b)
	return string(b), hex.EncodeToString(sum[:])
}

// differs names the first field both know that id and other disagree on.
func (id identity) differs(other identity) string {
	for _, f := range []struct{ name, a, b string }{
		{"origin", id.Origin, other.Origin}, {"executable", id.Executable, other.Executable},
		{"TLS key", id.TLSKey, other.TLSKey}, {"serverInfo", id.ServerInfo, other.ServerInfo},
		{"serverInfo (server/discover)", id.DiscoverInfo, other.DiscoverInfo},
	} {
		if f.a != "" && f.b != "" && f.a != f.b {
			return f.name
		}
	}
	return ""
}

// learns reports whether other knows a field id does not.
func (id identity) learns(other identity) bool {
	return id.TLSKey == "" && other.TLSKey != "" || id.ServerInfo == "" && other.ServerInfo != "" || id.Executable == "" && other.Executable != "" ||
		id.DiscoverInfo == "" && other.DiscoverInfo != ""
}

// filledFrom is id with the fields it does not know taken from pinned (a
// contact shows some fields only: the TLS key over https, serverInfo
// after the handshake of its own protocol version).
func (id identity) filledFrom(pinned identity) identity {
	for _, f := range []struct {
		have *string
		from string
	}{
		{&id.Origin, pinned.Origin}, {&id.Executable, pinned.Executable}, {&id.TLSKey, pinned.TLSKey},
		{&id.ServerInfo, pinned.ServerInfo}, {&id.DiscoverInfo, pinned.DiscoverInfo},
	} {
		if *f.have == "" {
			*f.have = f.from
		}
	}
	return id
}

// identityPin is a server's pinned identity, if any.
type identityPin struct {
	pin    projections.Pin
	pinned identity
	known  bool
}

// identityCache keeps a server's identity pin as read for identityFresh:
// a burst of client sessions connecting reads the pins view once. A
// change, a first sight or a learned field forgets it.
type identityCache struct {
	mu sync.Mutex
	ip identityPin
	at time.Time
}

const identityFresh = 10 * time.Second

func (c *identityCache) get(now time.Time) (identityPin, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ip, !c.at.IsZero() && now.Sub(c.at) < identityFresh
}

func (c *identityCache) put(ip identityPin, now time.Time) {
	c.mu.Lock()
	c.ip, c.at = ip, now
	c.mu.Unlock()
}

func (c *identityCache) forget() {
	c.mu.Lock()
	c.at = time.Time{}
	c.mu.Unlock()
}

func (s *Server) identityPin(ctx context.Context) (identityPin, error) {
	if ip, ok := s.identity.get(s.g.opts.Now()); ok {
		return ip, nil
	}
	ip, err := s.readIdentityPin(ctx)
	if err == nil {
		s.identity.put(ip, s.g.opts.Now())
	}
	return ip, err
}

func (s *Server) readIdentityPin(ctx context.Context) (identityPin, error) {
	pins, err := s.g.pins(ctx, s.name)
	if err != nil {
		return identityPin{}, err
	}
	p, ok := pins[projections.IdentityTool]
	if !ok || p.Hash == "" {
		return identityPin{pin: p}, nil
	}
	var id identity
	if err := json.Unmarshal([]byte(p.Descriptor), &id); err != nil {
		return identityPin{}, fmt.Errorf("server %s's pinned identity does not decode: %w", s.name, err)
	}
	return identityPin{pin: p, pinned: id, known: true}, nil
}

// origin is where the server is: a URL's scheme://host:port, or the
// command as configured (credentials redacted) in its folder.
func (s *Server) origin() string {
	if s.cfg.URL != "" {
		if u, err := url.Parse(s.cfg.URL); err == nil {
			return origin(u)
		}
		return events.SafeURL(s.cfg.URL)
	}
	o := "command: " + s.cfg.Describe()
	if s.cfg.Cwd != "" {
		o += " (in " + s.cfg.Cwd + ")"
	}
	return o
}

// checkIdentity compares what the server is now with its pin: nothing
// pinned pins it; a field both know and disagree on records the change
// once (upstream.tool.changed under IdentityTool, ServerChanged) and
// refuses the server until an operator accepts it; fields the pin did not
// know yet are learned. A change waiting refuses the server unless it is
// back to what was pinned.
func (s *Server) checkIdentity(req events.ID, ip identityPin, now identity) error {
	if ip.known {
		now = now.filledFrom(ip.pinned) // what this contact did not show stays as pinned
	}
	desc, hash := now.describe()
	if !ip.known || ip.pinned.differs(now) != "" || ip.pinned.learns(now) {
		s.identity.forget() // what it records changes the pin
	}
	attrs := events.A(projections.AttrUpTool, projections.IdentityTool, projections.AttrExposed, projections.IdentityName(s.name),
		projections.AttrHash, hash, projections.AttrDescriptor, desc)
	if !ip.known {
		s.keep(projections.IdentityTool, desc, hash)
		s.emit(events.KindUpstreamToolPinned, req, events.ID{}, events.OK, "", zeroTime, attrs)
		return nil
	}
	field := ip.pinned.differs(now)
	switch {
	case field == "" && ip.pinned.learns(now):
		s.keep(projections.IdentityTool, desc, hash)
		attrs.Set(projections.AttrLearned, ip.pin.Hash)
		s.emit(events.KindUpstreamToolPinned, req, events.ID{}, events.OK, "", zeroTime, attrs)
		return nil
	case field == "":
		return nil
	}
	if ip.pin.Pending != hash {
		s.keep(projections.IdentityTool, desc, hash)
		attrs.Set("pinned", ip.pin.Hash)
		attrs.Set(events.AttrError, fmt.Sprintf("server %s's %s changed since it was pinned", s.name, field))
		s.emit(events.KindUpstreamToolChanged, req, events.ID{}, events.Denied, events.CodeServerChanged, zeroTime, attrs)
		s.g.opts.Logger.Warn("upstream server changed: not contacted until accepted", "server", s.name, "field", field,
			"run", "tracebridge tools diff "+projections.IdentityName(s.name))
	}
	return events.Errorf(events.CodeServerChanged, "server %s is not the one pinned: its %s changed (review it with `tracebridge tools diff %s`, accept it with `tracebridge tools accept %s --hash %s`)",
		s.name, field, projections.IdentityName(s.name), projections.IdentityName(s.name), hash[:12])
}

// identityBefore checks what the server is before anything is sent or
// run — its origin and executable — against its pin, and arms l's TLS
// check with the pinned key. A re-drive's servers are recordings: not
// checked.
func (s *Server) identityBefore(ctx context.Context, req events.ID, l *link) (identityPin, identity, error) {
	now := identity{Origin: s.origin()}
	if s.g.opts.Dial != nil {
		return identityPin{}, now, nil
	}
	ip, err := s.identityPin(ctx)
	if err != nil {
		return ip, now, events.Errorf(events.CodeUpstreamUnavailable, "server %s: %v", s.name, err)
	}
	if s.cfg.URL == "" {
		now.Executable = commandHash(s.cfg.Command)
	}
	if ip.known {
		if err := s.checkIdentity(req, ip, now); err != nil {
			return ip, now, err
		}
	}
	if strings.HasPrefix(s.cfg.URL, "https:") {
		l.tls = &tlsPin{want: ip.pinned.TLSKey}
	}
	return ip, now, nil
}

// identityAfter checks the whole identity once the handshake is done (its
// TLS key, its serverInfo), pinning it on first sight; a changed one ends
// the session and the process before any call.
func (s *Server) identityAfter(req events.ID, ip identityPin, now identity, l *link, cs *sdk.ClientSession) error {
	if s.g.opts.Dial != nil {
		return nil
	}
	if l.tls != nil {
		now.TLSKey = l.tls.key()
	}
	if ir := cs.InitializeResult(); ir != nil && ir.ServerInfo != nil {
		if ir.ProtocolVersion >= newProtocol {
			now.DiscoverInfo = ir.ServerInfo.Name
		} else {
			now.ServerInfo = ir.ServerInfo.Name
		}
	}
	if err := s.checkIdentity(req, ip, now); err != nil {
		cs.Close()
		if l.proc != nil {
			l.proc.stop()
		}
		return err
	}
	return nil
}

// tlsPin checks an https server's certificate as the connection is made,
// before any request (headers, tokens) is written: the leaf's public key
// is recorded, and one other than the pinned key fails the handshake.
type tlsPin struct {
	want string // the pinned key's SHA-256 ("": none pinned)
	mu   sync.Mutex
	seen string
}

func (p *tlsPin) verify(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return nil
	}
	key := spkiHash(cs.PeerCertificates[0])
	p.mu.Lock()
	p.seen = key
	p.mu.Unlock()
	if p.want != "" && key != p.want {
		return fmt.Errorf("the server's TLS key %s is not the pinned %s", key[:12], p.want[:12])
	}
	return nil
}

func (p *tlsPin) key() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen
}

func spkiHash(c *x509.Certificate) string {
	sum := sha256.Sum256(c.RawSubjectPublicKeyInfo)
	return hex.EncodeToString(sum[:])
}
