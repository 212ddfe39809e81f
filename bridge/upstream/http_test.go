package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
)

// overHTTP serves one go-sdk server at /mcp (streamable HTTP) and /sse
// (the older SSE transport), answering only requests that carry the
// configured bearer; /moved redirects to elsewhere.
func overHTTP(t *testing.T, bearer, elsewhere string) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "http", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a struct {
		Text string `json:"text"`
	}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo " + a.Text}}}, nil, nil
	})
	need := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+bearer {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", need(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	mux.Handle("/sse", need(sdk.NewSSEHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere, http.StatusTemporaryRedirect)
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// A url server's configured headers, a secret expanded in them, reach its
// own origin over either transport; its calls are recorded with what was
// sent and answered, never the secret. A redirect to another origin is
// refused before anything is sent there.
func TestHTTPUpstreamHeadersReachItsOriginOnly(t *testing.T) {
	const secret = "sekret-bearer-7d1f"
	var stolen atomic.Int32
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		stolen.Add(1)
		http.Error(w, "gotcha", http.StatusTeapot)
	}))
	defer thief.Close()
	ts := overHTTP(t, secret, thief.URL+"/mcp")
	toml := "[secrets.TOKEN]\nenv = \"TB_TEST_TOKEN\"\n"
	for name, path := range map[string]string{"stream": "/mcp", "sse": "/sse", "moved": "/moved"} {
		toml += fmt.Sprintf("[servers.%s]\nurl = %q\nheaders = { Authorization = \"Bearer ${secret:TOKEN}\" }\n", name, ts.URL+path)
		if name == "sse" {
			toml += "transport = \"sse\"\n"
		}
	}
	var r *rig
	r = newRig(t, toml, Options{Secrets: func(names []string) (map[string]string, error) {
		if len(names) != 1 || names[0] != "TOKEN" {
			return nil, fmt.Errorf("asked for secrets %q", names)
		}
		r.em.Redactor().Register(secret) // as the executor's broker does
		return map[string]string{"TOKEN": secret}, nil
	}})
	ctx := context.Background()
	for _, name := range []string{"stream", "sse"} {
		req, res, err := r.call(t, nil, name+"__echo", `{"text":"hi"}`, nil)
		if err != nil || text(res) != "echo hi" {
			t.Fatalf("%s: %v", name, err)
		}
		got := r.crossings(t, req)
		if !has(got, events.KindUpstreamRequestSent+" tools/call ok") || !has(got, events.KindUpstreamResponse+"  ok") {
			t.Fatalf("%s's crossings: %q", name, got)
		}
	}
	_, err := r.g.servers["moved"].session(ctx, r.em.NewID(), r.em.NewID())
	if events.CodeOf(err) != events.CodeUpstreamUnavailable || !strings.Contains(err.Error(), "another origin") {
		t.Fatalf("a redirect to another origin: %v", err)
	}
	if n := stolen.Load(); n != 0 {
		t.Fatalf("the other origin got %d requests", n)
	}
	r.em.FlushAll(ctx)
	evs, _, _ := r.node.Range(ctx, 1, 10000)
	for _, e := range evs {
		if b, _ := json.Marshal(e); strings.Contains(string(b), secret) {
			t.Fatalf("the header's secret is in event %s", e.Kind)
		}
	}
}

// An http:// url to another host is refused at start (PlaintextUpstream),
// before anything is dialed, whatever let it past the configuration's
// check; with allow_plaintext the bridge dials it (and records that it
// did in clear).
func TestPlaintextUpstreamIsRefusedAtStart(t *testing.T) {
	r := newRig(t, "[servers.far]\nurl = \"http://192.0.2.1:9/mcp\"\nallow_plaintext = true\ntimeout = \"1s\"\n", Options{})
	far := r.g.servers["far"]
	_, err := far.session(context.Background(), events.ID{}, events.ID{})
	if e := events.AsErr(err, ""); e.Code == events.CodePlaintextUpstream || e.Code == "" {
		t.Fatalf("allow_plaintext = true: %v, want a dial that fails (TEST-NET-1)", err)
	}
	far.cfg.AllowPlaintext = false // as if the check had been skipped
	_, err = far.session(context.Background(), events.ID{}, events.ID{})
	if e := events.AsErr(err, ""); e.Code != events.CodePlaintextUpstream || !strings.Contains(e.Msg, "allow_plaintext") {
		t.Fatalf("http:// to another host: %v, want PlaintextUpstream naming the fix", err)
	}
}
