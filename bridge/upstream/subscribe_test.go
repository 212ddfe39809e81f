package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/events"
)

// watched is a go-sdk server with a resource clients subscribe to, a
// resource template and a prompt that complete their arguments; it counts
// the subscriptions it holds.
type watched struct {
	srv *sdk.Server

	mu   sync.Mutex
	subs map[string]int
}

func newWatched() *watched {
	w := &watched{subs: map[string]int{}}
	w.srv = sdk.NewServer(&sdk.Implementation{Name: "watched", Version: "1"}, &sdk.ServerOptions{
		SubscribeHandler: func(_ context.Context, r *sdk.SubscribeRequest) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.subs[r.Params.URI]++
			return nil
		},
		UnsubscribeHandler: func(_ context.Context, r *sdk.UnsubscribeRequest) error {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.subs[r.Params.URI]--
			return nil
		},
		CompletionHandler: func(_ context.Context, r *sdk.CompleteRequest) (*sdk.CompleteResult, error) {
			var values []string
			for _, v := range []string{"alpha", "alps", "beta"} {
				if strings.HasPrefix(v, r.Params.Argument.Value) {
					values = append(values, r.Params.Ref.Type+":"+v)
				}
			}
			if note, ok := r.Params.Meta["note"].(string); ok { // the client's _meta, as it arrived
				_, traced := r.Params.Meta["traceparent"].(string)
				values = append(values, fmt.Sprintf("meta:%s traceparent:%v", note, traced))
			}
			return &sdk.CompleteResult{Completion: sdk.CompletionResultDetails{Values: values}}, nil
		},
	})
	read := func(_ context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: req.Params.URI, Text: "now"}}}, nil
	}
	w.srv.AddResource(&sdk.Resource{URI: "file:///watched.txt", Name: "watched"}, read)
	w.srv.AddResourceTemplate(&sdk.ResourceTemplate{URITemplate: "file:///notes/{name}", Name: "notes"}, read)
	w.srv.AddPrompt(&sdk.Prompt{Name: "about", Arguments: []*sdk.PromptArgument{{Name: "topic"}}}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{}, nil
	})
	return w
}

func (w *watched) held(uri string) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.subs[uri]
}

// eventually polls cond for up to five seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("after 5s: %s", what)
		}
	}
}

// A client's subscription is made on its own link: the server's
// resources/updated reaches that client and no other, until it
// unsubscribes; the subscription crosses the upstream boundary under the
// request that asked for it.
func TestResourceUpdatesReachOnlyTheSubscriber(t *testing.T) {
	w := newWatched()
	r := newRig(t, oneServer, Options{Dial: dialInMemory(w.srv)})
	a := &client{key: "a", caps: &sdk.ClientCapabilities{}}
	b := &client{key: "b", caps: &sdk.ClientCapabilities{}}
	ctxA, ctxB := executor.WithClient(context.Background(), a), executor.WithClient(context.Background(), b)
	const uri = "file:///watched.txt"
	r.g.Ensure(ctxA, events.ID{}, "resources/list")

	req := r.em.NewID()
	if err := r.g.Subscribe(ctxA, req, uri); err != nil {
		t.Fatal(err)
	}
	if got := r.crossings(t, req); !has(got, events.KindUpstreamRequestSent+" resources/subscribe ok") {
		t.Fatalf("the subscription's crossings: %q", got)
	}
	if _, err := r.g.ReadResource(ctxB, r.em.NewID(), &sdk.ReadResourceParams{URI: uri}); err != nil { // b has a link too, not subscribed
		t.Fatal(err)
	}
	if err := w.srv.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a is told its resource changed", func() bool { _, _, u := a.seen(); return slices.Equal(u, []string{uri}) })

	if err := r.g.Unsubscribe(ctxA, r.em.NewID(), uri); err != nil {
		t.Fatal(err)
	}
	if n := w.held(uri); n != 0 {
		t.Fatalf("the server holds %d subscriptions after the unsubscribe", n)
	}
	if err := r.g.Subscribe(ctxB, r.em.NewID(), uri); err != nil {
		t.Fatal(err)
	}
	if err := w.srv.ResourceUpdated(context.Background(), &sdk.ResourceUpdatedNotificationParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "b is told after it subscribed", func() bool { _, _, u := b.seen(); return slices.Equal(u, []string{uri}) })
	if _, _, u := a.seen(); len(u) != 1 {
		t.Errorf("a was told %q after it unsubscribed", u)
	}
	if err := r.g.Subscribe(ctxA, r.em.NewID(), "file:///nobody-lists-this"); err == nil {
		t.Error("a subscription to a resource no server lists was made")
	}
}

// Templates are listed, and completion/complete goes to the server that
// offers the prompt (by its exposed name) or the template; a reference
// nobody offers completes to nothing.
func TestTemplatesAndCompletionGoToTheirServer(t *testing.T) {
	w := newWatched()
	r := newRig(t, oneServer, Options{Dial: dialInMemory(w.srv)})
	ctx := context.Background()
	r.g.Ensure(ctx, events.ID{}, "resources/templates/list")
	var templates []string
	for _, tm := range r.g.ResourceTemplates() {
		templates = append(templates, tm.URITemplate)
	}
	if !slices.Equal(templates, []string{"file:///notes/{name}"}) {
		t.Fatalf("templates %q", templates)
	}
	for _, tc := range []struct {
		ref  sdk.CompleteReference
		want []string
	}{
		{sdk.CompleteReference{Type: "ref/prompt", Name: "up__about"}, []string{"ref/prompt:alpha", "ref/prompt:alps"}},
		{sdk.CompleteReference{Type: "ref/resource", URI: "file:///notes/{name}"}, []string{"ref/resource:alpha", "ref/resource:alps"}},
		{sdk.CompleteReference{Type: "ref/prompt", Name: "about"}, []string{}}, // not its exposed name
		{sdk.CompleteReference{Type: "ref/resource", URI: "file:///other/{x}"}, []string{}},
	} {
		res, err := r.g.Complete(ctx, r.em.NewID(), &sdk.CompleteParams{Ref: &tc.ref, Argument: sdk.CompleteParamsArgument{Name: "topic", Value: "al"}})
		if err != nil {
			t.Fatalf("%+v: %v", tc.ref, err)
		}
		if got := res.Completion.Values; !slices.Equal(got, tc.want) {
			t.Errorf("%+v completes to %q, want %q", tc.ref, got, tc.want)
		}
	}
	if _, err := r.g.Complete(ctx, r.em.NewID(), &sdk.CompleteParams{}); err == nil {
		t.Error("a completion without a reference was answered")
	}
	// The client's _meta reaches the server whole, with this hop's traceparent.
	ref := sdk.CompleteReference{Type: "ref/prompt", Name: "up__about"}
	res, err := r.g.Complete(ctx, r.em.NewID(), &sdk.CompleteParams{Ref: &ref, Argument: sdk.CompleteParamsArgument{Name: "topic", Value: "zz"}, Meta: sdk.Meta{"note": "kept"}})
	if err != nil || !slices.Equal(res.Completion.Values, []string{"meta:kept traceparent:true"}) {
		t.Fatalf("a completion with the client's _meta: %v %v", res, err)
	}
}

// When a client session ends its links end with it: the server's session
// for that client closes, and the other client's link stays.
func TestReleaseEndsOnlyThatClientsLinks(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	a := &client{key: "a", caps: &sdk.ClientCapabilities{}}
	b := &client{key: "b", caps: &sdk.ClientCapabilities{}}
	for _, c := range []*client{a, b} {
		if _, _, err := r.call(t, c, "up__log", `{}`, nil); err != nil {
			t.Fatal(err)
		}
	}
	s := r.g.servers["up"]
	links := func() []string {
		s.mu.Lock()
		defer s.mu.Unlock()
		var keys []string
		for k := range s.links {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return keys
	}
	if got := links(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("links %q", got)
	}
	r.g.Release("a")
	r.g.Release("") // the shared link is the gateway's, never a client's to end
	if got := links(); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("links after a ended: %q", got)
	}
	if _, res, err := r.call(t, b, "up__log", `{}`, nil); err != nil || text(res) != "logged" {
		t.Fatalf("b after a ended: %v", err)
	}
	if _, res, err := r.call(t, a, "up__log", `{}`, nil); err != nil || text(res) != "logged" {
		t.Fatalf("a new session with a's key gets a new link: %v", err)
	}
}
