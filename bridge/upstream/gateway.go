package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
)

// Emitter is what the gateway needs of events.Emitter.
type Emitter interface {
	events.Recorder
	Redactor() *events.Redactor
}

// PinLog reads the pins view (a hub.Node).
type PinLog interface {
	View(ctx context.Context, q projections.Query) ([]json.RawMessage, error)
}

// Options configures New. Config, Emitter, Pins, Catalog and Secrets are
// required.
type Options struct {
	Config  *config.Config
	Emitter Emitter
	Pins    PinLog
	// Catalog receives each server's tools as source "upstream:NAME".
	Catalog *executor.Catalog
	// Secrets resolves secret references (registering the values with the
	// redactor before anything uses them): the executor's broker.
	Secrets func(names []string) (map[string]string, error)
	// Changed is called after the catalog's upstream tools changed.
	Changed func()
	// Dial, when set, connects to a server instead of starting its command
	// or dialing its URL (a session re-drive answers from the recording).
	Dial func(ctx context.Context, server string) (sdk.Transport, error)
	// Authorize is the policy step of a prompt or resource read (the
	// executor's): id is the exposed prompt name or the URI. Nil: allowed.
	Authorize func(ctx context.Context, req events.ID, id string, caps []string) error
	// Reserved are URI prefixes the bridge serves itself ("trace://"): no
	// upstream resource or template overlapping one is served.
	Reserved []string
	// Descriptors is the folder where each descriptor seen is kept whole,
	// named by its hash (the data dir's descriptors/). Empty: none kept.
	Descriptors string
	// StateDir holds each command server's own folders (NAME/state and
	// NAME/tmp), which it may change when confined. Empty: a folder under
	// the system's temporary directory.
	StateDir string
	// Getenv reads the bridge's environment for what a stdio upstream
	// inherits (config.BaseEnv and its inherit_env). Nil: nothing is
	// inherited; the upstream gets only its own env.
	Getenv func(string) string
	// Tokens keeps the OAuth grants of url servers with [servers.NAME.oauth]
	// (sealed in the data dir). Nil: none is stored; such a server answers
	// UpstreamUnauthorized.
	Tokens TokenStore
	// MaxFrame caps one frame from an upstream. Zero: the log's payload
	// limit and 1 MiB for the envelope, so every answer the log can keep
	// whole can pass.
	MaxFrame int
	// OneAtATime starts servers one after another, in name order, rather
	// than together: a session re-drive's evidence is then in one order
	// on every run (its servers are recordings; nothing waits on a process).
	OneAtATime bool
	// Guard judges descriptors and results (the executor). Nil: the
	// pack's defaults, with no cross-server memory.
	Guard   Guard
	Version string
	Now     func() time.Time
	Logger  *slog.Logger
}

// Gateway is every configured upstream.
type Gateway struct {
	opts    Options
	servers map[string]*Server
	names   []string
	changed sync.Mutex // serialises Changed calls

	conflictsMu sync.Mutex
	conflicts   map[string]bool // resource collisions recorded

	listedMu sync.Mutex
	listed   map[string][]string // the tool names each server listed last: the guard's neighbours
}

// New returns a gateway over opts.Config's servers; nothing starts yet.
func New(opts Options) *Gateway {
	if opts.MaxFrame <= 0 {
		opts.MaxFrame = events.DefaultMaxPayload + 1<<20
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	g := &Gateway{opts: opts, servers: map[string]*Server{}, conflicts: map[string]bool{}, listed: map[string][]string{}}
	if opts.Config != nil {
		for name, cfg := range opts.Config.Servers {
			g.servers[name] = newServer(g, name, cfg)
			g.names = append(g.names, name)
		}
	}
	sort.Strings(g.names)
	return g
}

// Servers lists the configured servers' names.
func (g *Gateway) Servers() []string { return g.names }

// Start connects the eager servers (in the background: a slow one does not
// hold the bridge's start).
func (g *Gateway) Start(ctx context.Context) {
	for _, name := range g.names {
		if s := g.servers[name]; s.cfg.Eager() {
			go func() {
				if _, err := s.session(ctx, events.ID{}, events.ID{}); err != nil {
					g.opts.Logger.Warn("upstream did not start", "server", name, "err", err)
				}
			}()
		}
	}
}

// Ensure makes every server's offer listed before method (tools/list,
// prompts/…, resources/…, or tools/call of a tool the catalog lacks) is
// answered; req is the request that asked (its run records the starts). A
// server listed once keeps its listing (it tells of changes); for
// tools/list, a server with pinned tools is listed from its pins and
// started when one of them is first used, so no client waits for the
// slowest server. Others are started, all at once, each bounded by its
// own timeout; one that cannot start is listed from its pins, so its
// tools stay listed and a call of one gets the real code.
func (g *Gateway) Ensure(ctx context.Context, req events.ID, method string) {
	var wg sync.WaitGroup
	for _, name := range g.names {
		s := g.servers[name]
		switch {
		case method == "tools/list" && !s.unlisted(ctx) && (s.listed.Load() || !s.cfg.Eager() && s.listFromPins(ctx)):
			continue
		case method != "tools/list" && method != "tools/call" && s.extras.Load() != nil:
			continue // its prompts and resources are listed (it tells of changes)
		case s.live(ctx):
			continue
		}
		start := func() {
			if _, err := s.session(ctx, req, events.ID{}); err != nil {
				g.opts.Logger.Warn("upstream unavailable", "server", name, "err", err)
				s.listFromPins(ctx)
			}
		}
		if g.opts.OneAtATime {
			start()
			continue
		}
		wg.Go(start)
	}
	wg.Wait()
}

// EnsureTool makes tool callable when the catalog does not have it yet (a
// call before any tools/list): every server lists what its pins hold,
// which starts nothing; when the tool is still unknown, only its own
// server (by its NAME__ prefix) is started — every server only when the
// name says none (a server with prefix = false).
func (g *Gateway) EnsureTool(ctx context.Context, req events.ID, tool string) {
	for _, name := range g.names {
		g.servers[name].listFromPins(ctx)
	}
	if _, ok := g.opts.Catalog.Lookup(tool); ok {
		return
	}
	if name, _, ok := strings.Cut(tool, config.Sep); ok {
		if s := g.servers[name]; s != nil && s.cfg.Prefixed() {
			if _, err := s.session(ctx, req, events.ID{}); err != nil {
				g.opts.Logger.Warn("upstream unavailable", "server", name, "err", err)
			}
			return
		}
	}
	g.Ensure(ctx, req, "tools/call")
}

// listFromPins puts the server's pinned tools in the catalog as pinned,
// unless it was listed already (it is then running or ran): false when it
// has no pinned tool to list.
func (s *Server) listFromPins(ctx context.Context) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.listed.Load() {
		return true
	}
	pins, err := s.g.pins(ctx, s.name)
	if err != nil {
		return false
	}
	tools := map[string]*toolState{}
	var listed []*executor.Tool
	for _, name := range sortedPinNames(pins) {
		p := pins[name]
		if p.State == projections.PinRemoved || !s.cfg.Exposes(name) || name == projections.IdentityTool {
			continue
		}
		pt, ok := pinnedTool(p, s.g.opts.Descriptors)
		if !ok {
			continue
		}
		desc, _ := describe(pt)
		st := &toolState{tool: pt, desc: desc, hash: p.Hash}
		if t := s.executorTool(st); t != nil {
			tools[name] = st
			listed = append(listed, t)
		}
	}
	if len(listed) == 0 {
		return false
	}
	if _, _, err := s.g.opts.Catalog.Replace("upstream:"+s.name, listed); err != nil {
		s.g.opts.Logger.Warn("pinned upstream tools not listed", "server", s.name, "err", err)
		return false
	}
	s.tools = tools
	s.listed.Store(true)
	s.g.catalogChanged()
	return true
}

// catalogChanged tells the Changed hook, one call at a time.
func (g *Gateway) catalogChanged() {
	if g.opts.Changed != nil {
		g.changed.Lock()
		g.opts.Changed()
		g.changed.Unlock()
	}
}

func sortedPinNames(m map[string]projections.Pin) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Close ends every session and stops every process.
func (g *Gateway) Close() {
	var wg sync.WaitGroup
	for _, s := range g.servers {
		wg.Add(1)
		go func() { defer wg.Done(); s.close() }()
	}
	wg.Wait()
}

func (g *Gateway) redact(s string) string { return g.opts.Emitter.Redactor().Value("error", s) }

// refreshLocked lists the server's tools, compares each descriptor with its
// pin (recording first sights, changes and removals), and puts the exposed
// tools in the catalog. s.mu is held.
func (s *Server) refreshLocked(ctx context.Context, req events.ID, cs *sdk.ClientSession) error {
	now := []*sdk.Tool{} // listed, if empty: nil is a generation never listed (listings)
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		now = append(now, t)
	}
	listed := s.unionLocked(cs, now)
	pins, err := s.g.pins(ctx, s.name)
	if err != nil {
		return fmt.Errorf("read the pins: %w", err)
	}
	next := map[string]*toolState{}
	// What clients are shown: a tool as pinned. A changed descriptor's text
	// never reaches a client before an operator accepts it (its calls are
	// refused meanwhile); a pinned descriptor that cannot be read back whole
	// leaves the tool unlisted.
	shown := map[string]*toolState{}
	for _, t := range listed {
		if t == nil || !s.cfg.Exposes(t.Name) {
			continue
		}
		st, sh := s.pinTool(req, t, pins)
		next[t.Name] = st
		if sh != nil {
			shown[t.Name] = sh
		}
	}
	for name, p := range pins {
		if next[name] == nil && p.State != projections.PinRemoved && s.cfg.Exposes(name) && name != projections.IdentityTool {
			s.emit(events.KindUpstreamToolRemoved, req, events.ID{}, events.OK, "", zeroTime, events.A(projections.AttrUpTool, name, projections.AttrExposed, p.Name, projections.AttrHash, p.Hash))
		}
	}
	// The pins must be in the log before a call checks against them.
	fctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := s.g.opts.Emitter.Flush(fctx, req); err != nil {
		s.g.opts.Logger.Warn("pins not durable yet", "server", s.name, "err", err)
	}
	s.tools = next
	s.g.setListed(s.name, sortedToolNames(next))
	var tools []*executor.Tool
	offered := s.offeredLocked()
	for _, name := range sortedToolNames(shown) {
		if t := s.executorTool(shown[name]); t != nil {
			t.Offered = offered(name)
			tools = append(tools, t)
		}
	}
	if err := s.listExtrasLocked(ctx, req, cs); err != nil {
		s.g.opts.Logger.Warn("upstream prompts or resources could not be listed", "server", s.name, "err", err)
	}
	s.g.recordConflicts()
	// Descriptors may change under the same names: the clients hear of
	// every refresh, not only of added and removed tools.
	if _, _, err := s.g.opts.Catalog.Replace("upstream:"+s.name, tools); err != nil {
		return err
	}
	s.listed.Store(true)
	s.g.catalogChanged()
	return nil
}

// unlisted reports whether the server was never listed on the protocol
// generation ctx's client speaks (it may offer other tools there): on the
// new one at all, on the old one when the new one was.
func (s *Server) unlisted(ctx context.Context) bool {
	_, _, version := s.keyOf(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if generation(version) == 0 {
		return s.listings[0] == nil && s.listings[1] != nil
	}
	return s.listings[1] == nil
}

// generation is s.listings' index for protocol version v: 0 for the
// versions with sessions, 1 for newProtocol on.
func generation(v string) int {
	if v >= newProtocol {
		return 1
	}
	return 0
}

// names is the set of the tools' names (nil for a listing never made).
func names(listing []*sdk.Tool) map[string]bool {
	if listing == nil {
		return nil
	}
	set := map[string]bool{}
	for _, t := range listing {
		if t != nil {
			set[t.Name] = true
		}
	}
	return set
}

// offeredLocked returns, for a tool's name, whether a client of a
// protocol version is shown it: a tool one generation's listing lacks is
// not listed to that generation's clients (once that generation was
// listed; before, it is). s.mu is held.
func (s *Server) offeredLocked() func(name string) func(v string) bool {
	sets := [2]map[string]bool{names(s.listings[0]), names(s.listings[1])}
	return func(name string) func(v string) bool {
		if sets[0] == nil || sets[1] == nil || sets[0][name] && sets[1][name] {
			return nil // offered on both, or only one generation is known
		}
		return func(v string) bool { return sets[generation(v)][name] }
	}
}

// unionLocked notes what a link of cs's protocol generation listed and
// returns the server's tools as both generations last listed them (this
// listing first): a server may offer tools on the new protocol that it
// does not on the old, and one generation's listing does not remove the
// other's tools. s.mu is held.
func (s *Server) unionLocked(cs *sdk.ClientSession, now []*sdk.Tool) []*sdk.Tool {
	gen := 0
	if ir := cs.InitializeResult(); ir != nil {
		gen = generation(ir.ProtocolVersion)
	}
	s.listings[gen] = now
	out := slices.Clone(now)
	seen := names(now)
	for _, t := range s.listings[1-gen] {
		if t != nil && !seen[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

// pinTool compares a listed tool with its pin and records what changed:
// first sight pins it; a changed descriptor is recorded once and refused
// until an operator accepts it. It returns the tool's state and what
// clients are shown of it: the pinned descriptor (nil: not shown).
func (s *Server) pinTool(req events.ID, t *sdk.Tool, pins map[string]projections.Pin) (st, shown *toolState) {
	desc, hash := describe(t)
	st = &toolState{tool: t, desc: desc, hash: hash}
	ann, _ := json.Marshal(t.Annotations)
	s.annotations.Store(t.Name, projections.AnnotationFlags(string(ann))) // what result rules see, without s.mu
	pinAttrs := events.A(projections.AttrUpTool, t.Name, projections.AttrExposed, s.exposed(t.Name), projections.AttrHash, hash, projections.AttrDescriptor, desc)
	p, known := pins[t.Name]
	shown = st
	if known && p.Hash != hash {
		shown = nil
		if pt, ok := pinnedTool(p, s.g.opts.Descriptors); ok {
			shown = &toolState{tool: pt, hash: p.Hash}
		}
		if p.State == projections.PinFlagged {
			shown = &toolState{tool: t, desc: desc, hash: hash, held: true} // in the catalog, refused, never listed
		}
	}
	switch {
	case !known || (p.Hash == hash && p.State == projections.PinRemoved):
		if !s.within(&s.pins, "tools/list") {
			return st, nil // not pinned: not served until a later listing pins it
		}
		s.keep(t.Name, desc, hash)
		fs, hold := s.held(t)
		if len(fs) > 0 {
			pinAttrs.Set(projections.AttrFindings, guard.JSON(fs))
		}
		if hold {
			pinAttrs.Set(events.AttrRule, fs[0].Rule)
			pinAttrs.Set(events.AttrError, fmt.Sprintf("the guard held server %s's tool %s: %s", s.name, t.Name, fs[0].Why))
			s.emit(events.KindUpstreamToolFlagged, req, events.ID{}, events.Denied, events.CodeToolFlagged, zeroTime, pinAttrs)
			s.g.opts.Logger.Warn("upstream tool held by the guard until accepted", "server", s.name, "tool", t.Name, "rule", fs[0].Rule,
				"run", "tracebridge tools list --state flagged")
			return st, &toolState{tool: t, desc: desc, hash: hash, held: true}
		}
		s.emit(events.KindUpstreamToolPinned, req, events.ID{}, events.OK, "", zeroTime, pinAttrs)
	case p.Hash == hash || p.Pending != "":
		// as pinned, or a change already announced: one pending change
		// is recorded until it is accepted (a server whose descriptors
		// change at every listing records one per tool, not one per
		// listing); calls stay refused meanwhile
	case !s.within(&s.pins, "tools/list"):
		// over the budget: calls are refused all the same (the hash
		// is not the pin's); a later listing records the change
	default:
		s.keep(t.Name, desc, hash)
		pinAttrs.Set("pinned", p.Hash)
		if fs := s.judgeDescriptor(t); len(fs) > 0 {
			pinAttrs.Set(projections.AttrFindings, guard.JSON(fs))
		}
		pinAttrs.Set(events.AttrError, fmt.Sprintf("server %s changed tool %s's descriptor since it was pinned", s.name, t.Name))
		s.emit(events.KindUpstreamToolChanged, req, events.ID{}, events.Denied, events.CodeToolChanged, zeroTime, pinAttrs)
		s.g.opts.Logger.Warn("upstream tool changed: refused until accepted", "server", s.name, "tool", t.Name,
			"run", "tracebridge tools diff "+s.exposed(t.Name))
	}
	return st, shown
}

// keep keeps a descriptor the log records whole in the descriptors folder
// (not one holding a registered secret: the file would hold it).
func (s *Server) keep(tool, desc, hash string) {
	if s.g.opts.Emitter.Redactor().Scrub(desc) != desc {
		return
	}
	if err := projections.SaveDescriptor(s.g.opts.Descriptors, desc, hash); err != nil {
		s.g.opts.Logger.Warn("a descriptor could not be kept whole", "server", s.name, "tool", tool, "err", err)
	}
}

func sortedToolNames(m map[string]*toolState) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pins reads the pins of server's tools, by upstream tool name.
func (g *Gateway) pins(ctx context.Context, server string) (map[string]projections.Pin, error) {
	all, err := projections.Read[projections.Pin](ctx, g.opts.Pins, projections.Query{View: projections.ViewPins, Limit: 1 << 20})
	if err != nil {
		return nil, err
	}
	out := map[string]projections.Pin{}
	for _, p := range all {
		if p.Server == server {
			out[p.Tool] = p
		}
	}
	return out, nil
}

// admittedFor is how long a tool found as pinned is admitted without asking
// the pins view again: a refusal is never cached (an acceptance counts at
// once), and another bridge's acceptance of a newer descriptor counts
// within this bound.
const admittedFor = 2 * time.Second

// admit refuses a tool whose listed descriptor is not the pinned one: the
// executor's catalog step, before policy and approval. The check that
// holds is writeGate's, when the request is written.
func (s *Server) admit(ctx context.Context, tool string) error {
	s.mu.Lock()
	st := s.tools[tool]
	s.mu.Unlock()
	return s.checkPin(ctx, st, tool)
}

// checkPin refuses st (tool as last listed) unless its hash is the pin's.
func (s *Server) checkPin(ctx context.Context, st *toolState, tool string) error {
	if st == nil {
		return events.Errorf(events.CodeUnknownTool, "server %s no longer lists tool %s", s.name, tool)
	}
	if until, ok := st.admitted.Load().(time.Time); ok && s.g.opts.Now().Before(until) {
		return nil
	}
	pins, err := projections.Read[projections.Pin](ctx, s.g.opts.Pins, projections.Query{View: projections.ViewPins, Key: projections.PinKey(s.name, tool)})
	if err != nil {
		return events.Errorf(events.CodeLogUnavailable, "the pinned descriptor of %s cannot be read: %v", s.exposed(tool), err)
	}
	var p projections.Pin
	if len(pins) > 0 {
		p = pins[0]
	}
	if len(pins) == 0 {
		return events.Errorf(events.CodeToolChanged, "tool %s of server %s has no pinned descriptor yet", tool, s.name)
	}
	if p.State == projections.PinFlagged {
		return s.flaggedError(p)
	}
	if p.Hash != st.hash {
		return events.Errorf(events.CodeToolChanged, "server %s changed tool %s's description, schema or annotations since it was pinned (pinned %s, now %s)",
			s.name, tool, short(p.Hash), short(st.hash))
	}
	st.admitted.Store(s.g.opts.Now().Add(admittedFor))
	return nil
}

// writeGate admits a call of tool on link l at the moment it is written:
// l is a live link of the server, and the tool as last listed is the
// pinned one. On success s.mu stays held, so no refresh
// (a restart's or a list_changed's) can change the listing before the
// request goes to the transport; the returned release unlocks it, once:
// the connection's Write calls it as it hands the request on.
func (s *Server) writeGate(ctx context.Context, l *link, tool string) (release func(), err error) {
	s.mu.Lock()
	if s.links[l.key] != l {
		s.mu.Unlock()
		return nil, events.Errorf(events.CodeUpstreamUnavailable, "server %s's session ended before the call was sent", s.name)
	}
	if err := s.checkPin(ctx, s.tools[tool], tool); err != nil {
		s.mu.Unlock()
		return nil, err
	}
	var once sync.Once
	return func() { once.Do(s.mu.Unlock) }, nil
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
