//lint:file-ignore SA1019 the test client answers the sampling, elicitation, roots and logging the gateway relays in their deprecation window (issue 25)

package upstream

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// rig is a gateway over a real hub (embedded NATS, a bbolt file) and a
// real emitter, with the servers of toml.
type rig struct {
	node *hub.Node
	em   *events.Emitter
	cat  *executor.Catalog
	g    *Gateway
}

// newRig opens a hub in a temporary data dir and a gateway over toml's
// servers; opts may set anything but Config, Emitter, Pins and Catalog.
func newRig(t *testing.T, toml string, opts Options) *rig {
	t.Helper()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: t.Name()})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	t.Cleanup(func() { em.Close(context.Background()) })
	cfg, err := config.Parse("tb.toml", []byte(toml))
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := executor.NewCatalog()
	opts.Config, opts.Emitter, opts.Pins, opts.Catalog = cfg, em, node, cat
	if opts.Logger == nil {
		opts.Logger = quiet
	}
	if opts.Secrets == nil {
		opts.Secrets = func([]string) (map[string]string, error) { return map[string]string{}, nil }
	}
	g := New(opts)
	t.Cleanup(g.Close)
	return &rig{node: node, em: em, cat: cat, g: g}
}

// dialInMemory dials srv over an in-memory transport, a new server
// session per link.
func dialInMemory(srv *sdk.Server) func(ctx context.Context, _ string) (sdk.Transport, error) {
	return func(ctx context.Context, _ string) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// call runs the catalog's tool id for client c (nil: no client session)
// under a new request, and returns the request id with the result.
func (r *rig) call(t *testing.T, c *client, id, args string, progress func(p, total float64, msg string)) (events.ID, *sdk.CallToolResult, error) {
	t.Helper()
	ctx := context.Background()
	if c != nil {
		ctx = executor.WithClient(ctx, c)
	}
	r.g.Ensure(ctx, events.ID{}, "tools/call")
	tool, ok := r.cat.Lookup(id)
	if !ok {
		t.Fatalf("%s is not in the catalog", id)
	}
	req := r.em.NewID()
	res, err := tool.Run(ctx, executor.Call{RequestID: req, OperationID: r.em.NewID(), Args: []byte(args), Progress: progress})
	if err != nil {
		return req, nil, err
	}
	return req, res.(*sdk.CallToolResult), nil
}

// crossings are the events of request req, flushed first, as
// "kind method outcome code".
func (r *rig) crossings(t *testing.T, req events.ID) []string {
	t.Helper()
	ctx := context.Background()
	if err := r.em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}
	evs, err := r.node.ByRequest(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, strings.TrimSpace(strings.Join([]string{e.Kind, e.Attrs.Get("method"), string(e.Outcome), string(e.Code)}, " ")))
	}
	return out
}

// has reports whether crossings holds want.
func has(crossings []string, want string) bool { return slices.Contains(crossings, want) }

// client is a client session of the bridge as the gateway sees it: the
// peer outside this package (bridge/mcp's session of an MCP client). It
// answers what it declared and keeps what it was told.
type client struct {
	key   string
	caps  *sdk.ClientCapabilities
	roots []*sdk.Root
	level string

	mu      sync.Mutex
	asked   []string // methods the upstream asked of it
	logs    []*sdk.LoggingMessageParams
	updated []string // resource URIs it was told changed
}

func (c *client) Key() string                           { return c.key }
func (c *client) Capabilities() *sdk.ClientCapabilities { return c.caps }
func (c *client) ProtocolVersion() string               { return "2025-11-25" }
func (c *client) LogLevel() string                      { return c.level }
func (c *client) Related(ctx context.Context, _ events.ID) context.Context {
	return ctx
}

func (c *client) note(method string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked = append(c.asked, method)
}

func (c *client) Roots(context.Context) ([]*sdk.Root, error) {
	c.note("roots/list")
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.roots), nil
}

func (c *client) CreateMessage(_ context.Context, p *sdk.CreateMessageParams) (*sdk.CreateMessageResult, error) {
	c.note("sampling/createMessage")
	return &sdk.CreateMessageResult{Role: "assistant", Model: "test-model",
		Content: &sdk.TextContent{Text: "sampled: " + p.Messages[0].Content.(*sdk.TextContent).Text}}, nil
}

func (c *client) CreateMessageWithTools(context.Context, *sdk.CreateMessageWithToolsParams) (*sdk.CreateMessageWithToolsResult, error) {
	c.note("sampling/createMessage")
	return &sdk.CreateMessageWithToolsResult{Role: "assistant", Model: "test-model", Content: []sdk.Content{&sdk.TextContent{Text: "with tools"}}}, nil
}

func (c *client) Elicit(_ context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	c.note("elicitation/create")
	return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"answer": "to " + p.Message}}, nil
}

func (c *client) Log(_ context.Context, p *sdk.LoggingMessageParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.logs = append(c.logs, p)
}

func (c *client) ResourceUpdated(_ context.Context, p *sdk.ResourceUpdatedNotificationParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.updated = append(c.updated, p.URI)
}

func (c *client) seen() (asked []string, logs []*sdk.LoggingMessageParams, updated []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.asked), slices.Clone(c.logs), slices.Clone(c.updated)
}
