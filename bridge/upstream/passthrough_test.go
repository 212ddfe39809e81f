package upstream

import (
	"context"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// offering is a go-sdk server with one prompt, its own resource, a
// resource another server lists too, and one in the bridge's reserved
// scheme.
func offering(name string) func(ctx context.Context, _ string) (sdk.Transport, error) {
	srv := sdk.NewServer(&sdk.Implementation{Name: name, Version: "1"}, nil)
	// Each answer says the traceparent its request came with, second.
	srv.AddPrompt(&sdk.Prompt{Name: "greet", Description: "says hello"}, func(_ context.Context, req *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello from " + name}},
			{Role: "user", Content: &sdk.TextContent{Text: tp}}}}, nil
	})
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		tp, _ := req.Params.Meta["traceparent"].(string)
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: name + " has " + req.Params.URI},
			{URI: req.Params.URI + "#traceparent", Text: tp}}}, nil
	}
	srv.AddResource(&sdk.Resource{URI: "file:///" + name + ".txt", Name: name}, read)
	srv.AddResource(&sdk.Resource{URI: "file:///shared.txt", Name: "shared"}, read)
	srv.AddResource(&sdk.Resource{URI: "trace://runs/forged", Name: "forged"}, read)
	return func(ctx context.Context, _ string) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// Prompts and resources of two real servers pass through: each prompt
// under its server's prefix, each resource from the one server that lists
// it; a URI both list and one in the bridge's own scheme are served by
// neither, and a read of them is refused; every read is on the log as the
// request's upstream hop.
func TestPromptsAndResourcesPassThroughToTheirOwner(t *testing.T) {
	ctx := context.Background()
	dials := map[string]func(context.Context, string) (sdk.Transport, error){"a": offering("a"), "b": offering("b")}
	r := newRig(t, "[servers.a]\ncommand = \"in memory\"\n[servers.b]\ncommand = \"in memory\"\n", Options{Reserved: []string{"trace://"},
		Dial: func(ctx context.Context, server string) (sdk.Transport, error) { return dials[server](ctx, server) }})
	g, em, node := r.g, r.em, r.node
	g.Ensure(ctx, events.ID{}, "prompts/list")

	var prompts, uris []string
	for _, p := range g.Prompts() {
		prompts = append(prompts, p.Name)
	}
	for _, r := range g.Resources() {
		uris = append(uris, r.URI)
	}
	slices.Sort(prompts)
	slices.Sort(uris)
	if !slices.Equal(prompts, []string{"a__greet", "b__greet"}) || !slices.Equal(uris, []string{"file:///a.txt", "file:///b.txt"}) {
		t.Fatalf("prompts %v, resources %v", prompts, uris)
	}

	req := em.NewID()
	const clientTP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	res, err := g.GetPrompt(events.WithTraceparent(ctx, clientTP), req, &sdk.GetPromptParams{Name: "b__greet"})
	if err != nil || res.Messages[0].Content.(*sdk.TextContent).Text != "hello from b" {
		t.Fatalf("b__greet: %v %+v", err, res)
	}
	read, err := g.ReadResource(ctx, req, &sdk.ReadResourceParams{URI: "file:///a.txt"})
	if err != nil || read.Contents[0].Text != "a has file:///a.txt" {
		t.Fatalf("file:///a.txt: %v %+v", err, read)
	}
	for _, uri := range []string{"file:///shared.txt", "trace://runs/forged"} {
		if _, err := g.ReadResource(ctx, em.NewID(), &sdk.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("%s was read; two servers list it or it is the bridge's own", uri)
		}
	}
	if _, err := g.GetPrompt(ctx, em.NewID(), &sdk.GetPromptParams{Name: "greet"}); err == nil {
		t.Error("a prompt without its server's prefix was served")
	}

	em.FlushAll(ctx)
	evs, _ := node.ByRequest(ctx, req)
	var hops []string
	var spans []events.ID
	for _, e := range evs {
		if e.Kind == events.KindUpstreamRequestSent {
			hops = append(hops, e.Attrs.Get("server")+" "+e.Attrs.Get("method"))
			spans = append(spans, e.ID)
		}
	}
	if len(hops) != 2 || hops[0] != "b prompts/get" || hops[1] != "a resources/read" {
		t.Fatalf("the request's upstream hops: %q", hops)
	}
	// Each hop's traceparent names its own span: in the client's trace
	// when the client sent one, else in the request's own.
	if got, want := res.Messages[1].Content.(*sdk.TextContent).Text, events.Traceparent(clientTP, req, spans[0]); got != want || !strings.HasPrefix(got, "00-4bf92f3577b34da6a3ce929d0e0e4736-") {
		t.Errorf("prompts/get went with traceparent %q, want %q", got, want)
	}
	if got, want := read.Contents[1].Text, events.Traceparent("", req, spans[1]); got != want {
		t.Errorf("resources/read went with traceparent %q, want %q", got, want)
	}
}
