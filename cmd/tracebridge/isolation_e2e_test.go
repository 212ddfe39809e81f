package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// sessionProbe is a client session of the HTTP front door that keeps what
// the bridge sent it unasked: log messages and elicitation requests.
type sessionProbe struct {
	mu      sync.Mutex
	logs    []string
	elicits []string
}

func (p *sessionProbe) connect(t *testing.T, url, token string, elicitation bool) *sdk.ClientSession {
	t.Helper()
	opts := &sdk.ClientOptions{
		//lint:ignore SA1019 logging is deprecated in 2026-07-28 but in its window; the gateway forwards it (issue 13)
		LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			p.mu.Lock()
			p.logs = append(p.logs, fmt.Sprint(r.Params.Data))
			p.mu.Unlock()
		},
	}
	if elicitation {
		opts.ElicitationHandler = func(_ context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			p.mu.Lock()
			p.elicits = append(p.elicits, r.Params.Message)
			p.mu.Unlock()
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"response": "from this session"}}, nil
		}
	}
	c := sdk.NewClient(&sdk.Implementation{Name: "probe", Version: "1"}, opts)
	// 2025-11-25, as the conformance suite speaks: on 2026-07-28 a server
	// may not send elicitation/create while serving a request (multi
	// round-trip input requests instead, not relayed yet).
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	//lint:ignore SA1019 logging is deprecated in 2026-07-28 but in its window; the gateway forwards it (issue 13)
	if err := cs.SetLoggingLevel(context.Background(), &sdk.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return cs
}

func (p *sessionProbe) seen() (logs, elicits []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.logs...), append([]string(nil), p.elicits...)
}

// Per-session isolation at the HTTP front door: three client sessions, one
// upstream (the conformance suite's reference server). What the upstream
// tells or asks because of session A's calls (log messages, an
// elicitation) reaches A and never B, which is connected and listening; a
// session that did not declare elicitation has a link that does not
// either, so its upstream answers at once instead of waiting for a
// timeout.
func TestGatewayKeepsClientSessionsApart(t *testing.T) {
	long(t)
	dir, node := conformanceDir(t)
	ref := startReferenceServer(t, dir, node)
	cfg := filepath.Join(t.TempDir(), "tracebridge.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[servers.cf]\nurl = %q\ntimeout = \"120s\"\napproval = { \"*\" = \"never\" }\n", ref)), 0o600)
	data := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridge(t, data, "TRACEBRIDGE_CONFIG="+cfg)

	var a, b, c sessionProbe
	csA := a.connect(t, url, token, true)
	b.connect(t, url, token, true)
	csC := c.connect(t, url, token, false)
	ctx := context.Background()

	res, err := csA.CallTool(ctx, &sdk.CallToolParams{Name: "cf__test_tool_with_logging", Arguments: map[string]any{}})
	if err != nil || res.IsError {
		t.Fatalf("A's logging call: %v %+v", err, res)
	}
	res, err = csA.CallTool(ctx, &sdk.CallToolParams{Name: "cf__test_elicitation", Arguments: map[string]any{"message": "for A"}})
	if err != nil || !strings.Contains(textOf(res), "from this session") {
		t.Fatalf("A's elicitation call: %v %s", err, textOf(res))
	}
	eventually(t, 10*time.Second, "A hears its call's three log messages", func() bool {
		logs, _ := a.seen()
		return len(logs) >= 3
	})
	if logs, elicits := b.seen(); len(logs) > 0 || len(elicits) > 0 {
		t.Errorf("session B was told of A's call: logs %q, elicitations %q", logs, elicits)
	}
	if _, elicits := a.seen(); len(elicits) != 1 || elicits[0] != "for A" {
		t.Errorf("A's elicitations: %q", elicits)
	}

	res, err = csC.CallTool(ctx, &sdk.CallToolParams{Name: "cf__test_elicitation", Arguments: map[string]any{"message": "for C"}})
	if err != nil {
		t.Fatal(err)
	}
	if text := textOf(res); !strings.Contains(text, "Elicitation not supported or error") || strings.Contains(text, string(events.CodeUpstreamTimeout)) {
		t.Errorf("C, which offers no elicitation, got %q; want the upstream's answer to a refused elicitation", text)
	}
	// C's link declared no elicitation (C did not), so the upstream did
	// not ask: only A's elicitation crossed.
	if n := countKind(t, data, "upstream.client.asked"); n != 1 {
		t.Errorf("%d upstream.client.asked events; want 1 (A's)", n)
	}
	if logs, elicits := b.seen(); len(logs) > 0 || len(elicits) > 0 {
		t.Errorf("session B was told of others' calls: logs %q, elicitations %q", logs, elicits)
	}
}

// resources/updated reaches the client session that subscribed, on its own
// link, and no other: A subscribes and changes the resource; B, listening
// and not subscribed, hears nothing.
func TestResourceUpdatesGoToTheSubscriber(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridge(t, data, hostileConfig(t, "", map[string]string{
		"f": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_RESOURCES = "f://notes" }`}))
	var mu sync.Mutex
	heard := map[string][]string{}
	connect := func(who string) *sdk.ClientSession {
		c := sdk.NewClient(&sdk.Implementation{Name: who, Version: "1"}, &sdk.ClientOptions{
			ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
				mu.Lock()
				heard[who] = append(heard[who], r.Params.URI)
				mu.Unlock()
			}})
		cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	a, b := connect("a"), connect("b")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := b.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := a.Subscribe(ctx, &sdk.SubscribeParams{URI: "f://notes"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	if res, err := a.CallTool(ctx, &sdk.CallToolParams{Name: "f__touch", Arguments: map[string]any{"text": "f://notes"}}); err != nil || res.IsError {
		t.Fatalf("touch: %v %+v", err, res)
	}
	eventually(t, 10*time.Second, "A hears that f://notes changed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard["a"]) > 0
	})
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(heard["b"]) > 0 || heard["a"][0] != "f://notes" {
		t.Fatalf("heard: %v", heard)
	}
}

// On a shared link the upstream may ask for what the calling client does
// not offer: it gets a JSON-RPC error at once (never a timeout), recorded
// ClientIncapable; a client that offers sampling gets the request and its
// answer goes back, recorded with it.
func TestSharedLinkRefusesWhatTheClientLacks(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	cfg := hostileConfig(t, "", map[string]string{"f": "env = { TB_FAULT_UPSTREAM = \"1\" }\nsessions = \"shared\"\ntimeout = \"120s\""})
	url, token, _, _ := startHTTPBridge(t, data, cfg)
	connect := func(sampling bool) *sdk.ClientSession {
		opts := &sdk.ClientOptions{}
		if sampling {
			//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
			opts.CreateMessageHandler = func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
				//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
				return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "from the sampling client"}}, nil
			}
		}
		cs, err := sdk.NewClient(&sdk.Implementation{Name: "s", Version: "1"}, opts).Connect(context.Background(),
			&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}},
			&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := connect(false).CallTool(ctx, &sdk.CallToolParams{Name: "f__sample", Arguments: map[string]any{"text": "x"}})
	// -32601, as a client without the capability answers itself.
	if err != nil || !strings.Contains(textOf(res), "sampling refused") || !strings.Contains(textOf(res), "method not found") {
		t.Fatalf("a client without sampling: %v %q", err, textOf(res))
	}
	if n := countCode(t, data, "upstream.client.answered", events.CodeClientIncapable); n != 1 {
		t.Fatalf("%d ClientIncapable answers recorded, want 1", n)
	}
	res, err = connect(true).CallTool(ctx, &sdk.CallToolParams{Name: "f__sample", Arguments: map[string]any{"text": "x"}})
	if err != nil || !strings.Contains(textOf(res), "from the sampling client") {
		t.Fatalf("a client with sampling: %v %q", err, textOf(res))
	}
}
