//lint:file-ignore SA1019 sampling and elicitation are deprecated in 2026-07-28 but in their window: the gateway relays them (issue 25)

package sessions

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/pipe"
)

// askingUpstream is a go-sdk server whose tools ask the client mid-call:
// sample asks for a message, elicit for an answer.
func askingUpstream() func(context.Context, string) (sdk.Transport, error) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "asking", Version: "1"}, &sdk.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	sdk.AddTool(srv, &sdk.Tool{Name: "sample", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.CreateMessage(ctx, &sdk.CreateMessageParams{MaxTokens: 10,
			Messages: []*sdk.SamplingMessage{{Role: "user", Content: &sdk.TextContent{Text: "a haiku"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{res.Content}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "elicit", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.Elicit(ctx, &sdk.ElicitParams{Message: "your name?",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return nil, nil, err
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(res.Action) + " " + res.Content["name"].(string)}}}, nil, nil
	})
	return func(ctx context.Context, _ string) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// record runs a live bridge (bridge.New, as `tracebridge mcp` builds it)
// over a hub, with a go-sdk client that answers sampling and elicitation,
// lets drive use it, and exports the session it left.
func record(t *testing.T, cfgText string, dial func(context.Context, string) (sdk.Transport, error), drive func(*sdk.ClientSession)) *Session {
	t.Helper()
	return recordAs(t, identity.User{}, cfgText, dial, drive)
}

// recordAs is record with the client authenticated as user (the front
// door's [auth]).
func recordAs(t *testing.T, user identity.User, cfgText string, dial func(context.Context, string) (sdk.Transport, error), drive func(*sdk.ClientSession)) *Session {
	t.Helper()
	ctx := identity.With(context.Background(), user)
	dir := hub.DataDir(filepath.Join(t.TempDir(), "d"))
	if err := dir.Ensure(); err != nil {
		t.Fatal(err)
	}
	node := hubtest.Open(t, hub.Options{Dir: dir, Role: hub.Elect, Name: "live-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node})
	cfg, err := config.Parse("live.toml", []byte(cfgText))
	if err != nil {
		t.Fatal(err)
	}
	b, err := bridge.New(bridge.Parts{Config: cfg, ConfigText: cfgText, Emitter: em, Log: node, Version: "test", Dial: dial, Logger: quietSDK,
		Host: pipeHost{pipe.NewClient(pipe.ClientOptions{Path: dir.PipePath(), Recorder: em})}})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- b.Server.Serve(ctx, inR, outW); outW.Close() }()
	client := sdk.NewClient(&sdk.Implementation{Name: "live", Version: "1"}, &sdk.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "sampled: " + r.Params.Messages[0].Content.(*sdk.TextContent).Text}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	client.AddRoots(&sdk.Root{URI: "file:///work/live"})
	cs, err := client.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	drive(cs)
	cs.Close()
	<-served
	b.Close()
	if err := em.Close(ctx); err != nil {
		t.Fatal(err)
	}
	in, err := Gather(ctx, node, sessionOf(t, node))
	if err != nil {
		t.Fatal(err)
	}
	in.Name, in.Version = "live", "test"
	s, err := Export(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := s.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	again, err := DecodeSession(&buf)
	if err != nil {
		t.Fatalf("the exported session does not decode: %v", err)
	}
	return again
}

// A live session whose upstream asks the client mid-call records the
// questions and the client's answers, and re-drives with no drift: the
// recorded upstream asks the re-driven bridge the same, the recorded client
// answers the same, and an answer the bridge relayed differently would be
// drift (RecordedUpstreams.ask compares it).
func TestASessionWithClientRequestsRecordsAndRedrives(t *testing.T) {
	s := record(t, "[servers.up]\ncommand = \"in memory\"\n", askingUpstream(), func(cs *sdk.ClientSession) {
		for tool, want := range map[string]string{"up__sample": "sampled: a haiku", "up__elicit": "accept Ada"} {
			res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
			if err != nil || res.IsError || res.Content[0].(*sdk.TextContent).Text != want {
				t.Fatalf("%s: %v %+v", tool, err, res)
			}
		}
	})
	var asks []string
	for _, st := range s.Steps {
		for _, a := range st.Asks {
			asks = append(asks, a.Method+" → "+string(a.Answer))
		}
	}
	if len(asks) != 2 || !strings.Contains(asks[0]+asks[1], "sampled: a haiku") || !strings.Contains(asks[0]+asks[1], "Ada") {
		t.Fatalf("the file's asks: %q", asks)
	}
	res, _ := redriveInto(t, s)
	if len(res.Runs) == 0 {
		t.Fatal("nothing was re-driven")
	}
	for _, d := range res.Drift {
		t.Errorf("drift: %s", d)
	}
	// The re-drive relayed the recorded questions to the recorded client
	// under each call's request: the same crossings as the recording.
	asked := 0
	for _, run := range res.Runs {
		for _, e := range run.Events {
			if e.Kind == events.KindUpstreamAnswered && e.Outcome == events.OK {
				asked++
			}
		}
	}
	if asked != 2 {
		t.Fatalf("%d questions answered in the re-drive, want 2", asked)
	}
}

// richUpstream is a go-sdk server with what a session exercises besides
// client requests: roots, progress, a failing tool, a tool error, a
// prompt and a resource.
func richUpstream() func(context.Context, string) (sdk.Transport, error) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "rich", Version: "1"}, &sdk.ServerOptions{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ro := &sdk.ToolAnnotations{ReadOnlyHint: true}
	text := func(s string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: s}}}
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "roots", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return nil, nil, err
		}
		var uris []string
		for _, r := range res.Roots {
			uris = append(uris, r.URI)
		}
		return text(strings.Join(uris, " ")), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "count", Annotations: ro}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		for i := range 3 {
			if tok := req.Params.GetProgressToken(); tok != nil {
				req.Session.NotifyProgress(ctx, &sdk.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i + 1), Total: 3})
			}
		}
		return text("counted"), nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "fails", Annotations: ro}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "disk full"}}}, nil, nil
	})
	srv.AddPrompt(&sdk.Prompt{Name: "greet"}, func(context.Context, *sdk.GetPromptRequest) (*sdk.GetPromptResult, error) {
		return &sdk.GetPromptResult{Messages: []*sdk.PromptMessage{{Role: "user", Content: &sdk.TextContent{Text: "hello"}}}}, nil
	})
	srv.AddResource(&sdk.Resource{URI: "file:///notes.txt", Name: "notes"}, func(_ context.Context, r *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
		return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: r.Params.URI, Text: "the notes"}}}, nil
	})
	return func(ctx context.Context, _ string) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// Sessions recorded live in the package, each re-driven with no drift:
// what the file must hold for a re-drive to give every client the same
// answers, whatever the session exercised.
func TestLiveSessionsRedrive(t *testing.T) {
	const rich = "[servers.up]\ncommand = \"in memory\"\n"
	tools := t.TempDir()
	os.WriteFile(filepath.Join(tools, "byte_count.tool.json"), []byte(`{"id":"byte_count","description":"counts bytes","command":["/bin/cat"],"inputSchema":{"type":"object"}}`), 0o644)
	discovered := fmt.Sprintf("[discovery]\ndirs = [%q]\n", tools)
	os.WriteFile(filepath.Join(tools, "with_secret.tool.json"), []byte(`{"id":"with_secret","description":"answers with its secret","approval":"never","secrets":["K"],`+
		`"command":["/bin/sh","-c","cat >/dev/null; printf '{\"v\":\"%s\"}' \"$TB_SECRET_K\""],"inputSchema":{"type":"object"}}`), 0o644)
	t.Setenv("TB_LIVE_SECRET", "s3cr3t-value-for-the-live-test")
	withSecret := discovered + "[secrets.K]\nenv = \"TB_LIVE_SECRET\"\n[policy]\ngrant = [\"process.run\"]\n"
	bg := context.Background()
	call := func(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) *sdk.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(bg, &sdk.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res
	}
	for _, c := range []struct {
		name, config string
		drive        func(t *testing.T, cs *sdk.ClientSession)
	}{
		{"an upstream's progress and a failing tool", rich, func(t *testing.T, cs *sdk.ClientSession) {
			params := &sdk.CallToolParams{Name: "up__count", Arguments: map[string]any{}}
			params.SetProgressToken("p1")
			if res, err := cs.CallTool(bg, params); err != nil || res.IsError {
				t.Fatalf("count: %v %+v", err, res)
			}
			if res := call(t, cs, "up__fails", map[string]any{}); !res.IsError {
				t.Fatalf("fails: %+v", res)
			}
		}},
		{"an upstream asks for the client's roots", rich, func(t *testing.T, cs *sdk.ClientSession) {
			if res := call(t, cs, "up__roots", map[string]any{}); res.IsError || res.Content[0].(*sdk.TextContent).Text != "file:///work/live" {
				t.Fatalf("roots: %+v", res)
			}
		}},
		{"a prompt and a resource through the gateway", rich, func(t *testing.T, cs *sdk.ClientSession) {
			if _, err := cs.GetPrompt(bg, &sdk.GetPromptParams{Name: "up__greet"}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ReadResource(bg, &sdk.ReadResourceParams{URI: "file:///notes.txt"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"built-in tools, a denial and an unknown tool", "[policy]\ndeny = [\"bm25_text_search\"]\n", func(t *testing.T, cs *sdk.ClientSession) {
			if res := call(t, cs, "regex_text_search", map[string]any{"pattern": "b+", "text": "abba"}); res.IsError {
				t.Fatalf("regex: %+v", res)
			}
			if res := call(t, cs, "bm25_text_search", map[string]any{"query": "x", "entries": []any{}}); !res.IsError {
				t.Fatal("a denied tool ran")
			}
			if _, err := cs.CallTool(bg, &sdk.CallToolParams{Name: "no_such_tool"}); err == nil {
				t.Log("an unknown tool answered a tool error")
			}
		}},
		{"a discovered tool refused before it ran", discovered, func(t *testing.T, cs *sdk.ClientSession) {
			// Seed 73: it never ran, so no result was recorded; the re-drive
			// must still know it to refuse it the same way.
			if res := call(t, cs, "byte_count", map[string]any{"text": "abc"}); !res.IsError || !strings.Contains(fmt.Sprint(res.Meta), "PolicyDenied") {
				t.Fatalf("byte_count without process.run: %+v", res)
			}
		}},
		{"a discovered tool's result that holds its secret", withSecret, func(t *testing.T, cs *sdk.ClientSession) {
			res := call(t, cs, "with_secret", map[string]any{})
			// The guard redacts the secret the tool was handed before the
			// client reads it (it reached the client in clear).
			if res.IsError || strings.Contains(fmt.Sprint(res.StructuredContent, res.Content), "s3cr3t") || !strings.Contains(fmt.Sprint(res.StructuredContent), "REDACTED") {
				t.Fatalf("with_secret: %+v", res)
			}
		}},
		{"no workspace host", "", func(t *testing.T, cs *sdk.ClientSession) {
			if res := call(t, cs, "get_selection", map[string]any{}); !res.IsError {
				t.Fatalf("get_selection with no host: %+v", res)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := record(t, c.config, richUpstream(), func(cs *sdk.ClientSession) { c.drive(t, cs) })
			res, _ := redriveInto(t, s)
			if len(res.Runs) < 2 {
				t.Fatalf("%d runs re-driven", len(res.Runs))
			}
			for _, d := range res.Drift {
				t.Errorf("drift: %s", d)
			}
		})
	}
}

// A session recorded for an authenticated user names them in its file and
// re-drives as them: a rule by group decides as it did, with no drift.
// The twin: the same file without its user is decided otherwise, and
// that is drift.
func TestASessionRedrivesAsItsUser(t *testing.T) {
	bob := identity.User{Subject: "u-bob", Issuer: "https://idp.example", Name: "bob", Groups: []string{"dev"}}
	cfg := "[policy.rules.platform-searches]\ntools = [\"regex_text_search\"]\nwhen = \"user.authenticated && !('platform' in user.groups)\"\neffect = \"deny\"\n"
	s := recordAs(t, bob, cfg, nil, func(cs *sdk.ClientSession) {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "regex_text_search", Arguments: map[string]any{"query": "x", "text": "x"}})
		if err != nil || !res.IsError {
			t.Fatalf("bob's search: %v %+v", err, res)
		}
	})
	if s.Header.User == nil || s.Header.User.Subject != "u-bob" || s.Header.User.Groups[0] != "dev" {
		t.Fatalf("the file names %+v", s.Header.User)
	}
	if res, _ := redriveInto(t, s); len(res.Runs) == 0 || len(res.Drift) > 0 {
		t.Fatalf("re-driven as bob: %d runs, drift %v", len(res.Runs), res.Drift)
	}
	s.Header.User = nil
	if res, _ := redriveInto(t, s); len(res.Drift) == 0 {
		t.Fatal("re-driven as no one, the search ran and nothing drifted")
	}
}
