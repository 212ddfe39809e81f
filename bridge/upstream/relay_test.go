//lint:file-ignore SA1019 the gateway relays sampling, elicitation, roots and logging in their deprecation window (issue 25)

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

const oneServer = "[servers.up]\ncommand = \"unused: dialed in memory\"\n"

// asking is a go-sdk server whose tools ask their client things mid-call
// (sampling, elicitation, roots), tell it things (log messages,
// progress), and answer with what they got.
func asking() *sdk.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{
		Tools: &sdk.ToolCapabilities{}, Logging: &sdk.LoggingCapabilities{}}})
	type args struct {
		N int `json:"n,omitempty"`
	}
	answer := func(text string, err error) (*sdk.CallToolResult, any, error) {
		if err != nil {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: err.Error()}}}, nil, nil
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}}, nil, nil
	}
	tool := func(name string, h func(context.Context, *sdk.CallToolRequest, args) (string, error)) {
		sdk.AddTool(srv, &sdk.Tool{Name: name}, func(ctx context.Context, req *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
			return answer(h(ctx, req, a))
		})
	}
	tool("sample", func(ctx context.Context, req *sdk.CallToolRequest, _ args) (string, error) {
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "a haiku"}}}})
		if err != nil {
			return "", err
		}
		return res.Content.(*sdk.TextContent).Text, nil
	})
	tool("elicit", func(ctx context.Context, req *sdk.CallToolRequest, _ args) (string, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"answer": map[string]any{"type": "string"}}}})
		if err != nil {
			return "", err
		}
		return fmt.Sprint(res.Action, " ", res.Content["answer"]), nil
	})
	tool("elicit_url", func(ctx context.Context, req *sdk.CallToolRequest, _ args) (string, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Mode: "url", Message: "sign in", URL: "https://example.com/login", ElicitationID: "e1"})
		if err != nil {
			return "", err
		}
		return string(res.Action), nil
	})
	tool("roots", func(ctx context.Context, req *sdk.CallToolRequest, _ args) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return strings.Join(uris, " "), nil
	})
	tool("log", func(ctx context.Context, req *sdk.CallToolRequest, _ args) (string, error) {
		for _, lv := range []sdk.LoggingLevel{"debug", "info", "error"} {
			if err := req.Session.Log(ctx, &sdk.LoggingMessageParams{Level: lv, Logger: "work", Data: "at " + string(lv)}); err != nil {
				return "", err
			}
		}
		return "logged", nil
	})
	tool("progress", func(ctx context.Context, req *sdk.CallToolRequest, a args) (string, error) {
		token := req.Params.GetProgressToken()
		for i := range a.N {
			if token == nil {
				break
			}
			if err := req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(i + 1), Total: float64(a.N), Message: "step"}); err != nil {
				return "", err
			}
		}
		return fmt.Sprint("token ", token != nil), nil
	})
	return srv
}

func text(res *sdk.CallToolResult) string { return textOf(res) }

// A server's sampling and elicitation requests reach the client whose call
// they belong to, and its answers return to the server; each is recorded
// under the call's request id, the question and the answer.
func TestSamplingAndElicitationAreRelayedToTheCallingClient(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	c := &client{key: "c1", caps: &sdk.ClientCapabilities{Sampling: &sdk.SamplingCapabilities{}, Elicitation: &sdk.ElicitationCapabilities{}}}

	req, res, err := r.call(t, c, "up__sample", `{}`, nil)
	if err != nil || text(res) != "sampled: a haiku" {
		t.Fatalf("sample: %v %q", err, text(res))
	}
	if got := r.crossings(t, req); !has(got, events.KindUpstreamAsked+" sampling/createMessage ok") || !has(got, events.KindUpstreamAnswered+" sampling/createMessage ok") {
		t.Fatalf("the sampling's crossings under its request: %q", got)
	}
	req, res, err = r.call(t, c, "up__elicit", `{}`, nil)
	if err != nil || text(res) != "accept to your name?" {
		t.Fatalf("elicit: %v %q", err, text(res))
	}
	if got := r.crossings(t, req); !has(got, events.KindUpstreamAnswered+" elicitation/create ok") {
		t.Fatalf("the elicitation's crossings: %q", got)
	}
	// A URL elicitation needs the client to have declared url mode: its
	// link did not, so the server's SDK does not send it.
	_, _, err = r.call(t, c, "up__elicit_url", `{}`, nil)
	if events.CodeOf(err) != events.CodeUpstreamError || !strings.Contains(err.Error(), `does not support "url"`) {
		t.Fatalf("a url elicitation to a client without url mode: %v", err)
	}
	if asked, _, _ := c.seen(); !slices.Equal(asked, []string{"sampling/createMessage", "elicitation/create"}) {
		t.Fatalf("the client was asked %q", asked)
	}
}

// A client that declared neither sampling nor elicitation is never asked:
// its link declares neither either, so the server's SDK refuses at once
// and its tool fails. With no client session at all (the shared link,
// which declares both for whichever client calls), the gateway answers
// the server that there is no one to ask, and the log says so.
func TestAnIncapableClientIsNeverAsked(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	c := &client{key: "plain", caps: &sdk.ClientCapabilities{}}
	for _, tool := range []string{"sample", "elicit"} {
		_, _, err := r.call(t, c, "up__"+tool, `{}`, nil)
		if events.CodeOf(err) != events.CodeUpstreamError || !strings.Contains(err.Error(), "does not support") {
			t.Fatalf("%s for a client without the capability: %v", tool, err)
		}
	}
	if asked, _, _ := c.seen(); len(asked) != 0 {
		t.Fatalf("an incapable client was asked %q", asked)
	}
	req, _, err := r.call(t, nil, "up__sample", `{}`, nil)
	if events.CodeOf(err) != events.CodeUpstreamError {
		t.Fatalf("sample with no client: %v", err)
	}
	if got := r.crossings(t, req); !has(got, events.KindUpstreamAnswered+" sampling/createMessage unavailable ClientIncapable") {
		t.Fatalf("crossings with no client: %q", got)
	}
}

// On a shared link (declaring sampling and elicitation for whichever
// client calls), a caller that declared neither is not asked: the gateway
// answers the server itself, and the log names the refusal.
func TestASharedLinkAsksOnlyACapableCaller(t *testing.T) {
	r := newRig(t, oneServer+"sessions = \"shared\"\n", Options{Dial: dialInMemory(asking())})
	plain := &client{key: "plain", caps: &sdk.ClientCapabilities{}}
	capable := &client{key: "capable", caps: &sdk.ClientCapabilities{Sampling: &sdk.SamplingCapabilities{}, Elicitation: &sdk.ElicitationCapabilities{}}}
	for _, tool := range []string{"sample", "elicit"} {
		req, _, err := r.call(t, plain, "up__"+tool, `{}`, nil)
		if events.CodeOf(err) != events.CodeUpstreamError {
			t.Fatalf("%s for an incapable caller on the shared link: %v", tool, err)
		}
		got := r.crossings(t, req)
		if !slices.ContainsFunc(got, func(x string) bool { return strings.HasSuffix(x, "unavailable ClientIncapable") }) {
			t.Fatalf("%s's crossings: %q", tool, got)
		}
	}
	if _, res, err := r.call(t, capable, "up__sample", `{}`, nil); err != nil || text(res) != "sampled: a haiku" {
		t.Fatalf("sample for a capable caller on the shared link: %v", err)
	}
	if asked, _, _ := plain.seen(); len(asked) != 0 {
		t.Fatalf("an incapable caller was asked %q", asked)
	}
}

// The server asks for the roots of the client whose link it is on: each
// client session has its own, and a change reaches the server.
func TestRootsAreTheLinkOwnersAndFollowItsChanges(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	caps := &sdk.ClientCapabilities{RootsV2: &sdk.RootCapabilities{ListChanged: true}}
	a := &client{key: "a", caps: caps, roots: []*sdk.Root{{URI: "file:///work/a"}}}
	b := &client{key: "b", caps: caps, roots: []*sdk.Root{{URI: "file:///work/b1"}, {URI: "file:///work/b2"}}}
	for _, tc := range []struct {
		c    *client
		want string
	}{{a, "file:///work/a"}, {b, "file:///work/b1 file:///work/b2"}} {
		if _, res, err := r.call(t, tc.c, "up__roots", `{}`, nil); err != nil || text(res) != tc.want {
			t.Fatalf("roots of %s: %v %q", tc.c.key, err, text(res))
		}
	}
	a.mu.Lock()
	a.roots = []*sdk.Root{{URI: "file:///work/a2"}}
	a.mu.Unlock()
	r.g.RootsChanged(executor.WithClient(context.Background(), a))
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, res, err := r.call(t, a, "up__roots", `{}`, nil)
		if err == nil && text(res) == "file:///work/a2" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server still sees %q after the client's roots changed (%v)", text(res), err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Log messages reach the calling client at the level it asked for, under
// the server's name, and the log records them at info and above; a
// client that set no level gets info and above.
func TestLogMessagesGoToTheirClientUnderTheServersName(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	debug := &client{key: "debug", caps: &sdk.ClientCapabilities{}, level: "debug"}
	plain := &client{key: "plain", caps: &sdk.ClientCapabilities{}}
	for _, c := range []*client{debug, plain} {
		if _, res, err := r.call(t, c, "up__log", `{}`, nil); err != nil || text(res) != "logged" {
			t.Fatalf("log for %s: %v %q", c.key, err, text(res))
		}
	}
	levels := func(c *client) []string {
		_, logs, _ := c.seen()
		var out []string
		for _, l := range logs {
			out = append(out, l.Logger+":"+string(l.Level))
		}
		return out
	}
	if got := levels(debug); !slices.Equal(got, []string{"up/work:debug", "up/work:info", "up/work:error"}) {
		t.Errorf("the debug client got %q", got)
	}
	if got := levels(plain); !slices.Equal(got, []string{"up/work:info", "up/work:error"}) {
		t.Errorf("the client with no level got %q", got)
	}
}

// Progress an upstream reports reaches the client that asked for it, and
// the first maxProgressEvents of a call are recorded under its request;
// a call without a progress callback sends the upstream no token.
func TestProgressIsForwardedAndItsRecordBounded(t *testing.T) {
	r := newRig(t, oneServer, Options{Dial: dialInMemory(asking())})
	c := &client{key: "c", caps: &sdk.ClientCapabilities{}}
	var mu sync.Mutex
	var got []float64
	n := maxProgressEvents + 10
	req, res, err := r.call(t, c, "up__progress", fmt.Sprintf(`{"n":%d}`, n), func(p, total float64, msg string) {
		mu.Lock()
		defer mu.Unlock()
		if total != float64(n) || msg != "step" {
			t.Errorf("progress %v/%v %q", p, total, msg)
		}
		got = append(got, p)
	})
	if err != nil || text(res) != "token true" {
		t.Fatalf("progress: %v %q", err, text(res))
	}
	mu.Lock()
	if len(got) != n || got[n-1] != float64(n) {
		t.Errorf("the client got %d progress notifications, want %d in order: %v", len(got), n, got)
	}
	mu.Unlock()
	recorded := 0
	for _, x := range r.crossings(t, req) {
		if x == events.KindUpstreamNotification+" notifications/progress ok" {
			recorded++
		}
	}
	if recorded != maxProgressEvents {
		t.Errorf("%d progress notifications recorded, want the first %d", recorded, maxProgressEvents)
	}
	if _, res, err := r.call(t, c, "up__progress", `{"n":3}`, nil); err != nil || text(res) != "token false" {
		t.Fatalf("a call without progress: %v %q", err, text(res))
	}
}
