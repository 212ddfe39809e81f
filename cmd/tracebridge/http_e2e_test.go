package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// startHTTPBridge runs `tracebridge mcp --http` on a free port with env
// and returns its URL, the bearer token, its stderr and the process (killed
// at cleanup), once it listens.
func startHTTPBridge(t testing.TB, data string, env ...string) (url, token string, stderr *testenv.Buffer, cmd *exec.Cmd) {
	t.Helper()
	return startHTTPBridgeWith(t, data, nil, env...)
}

// startHTTPBridgeWith is startHTTPBridge with more flags for mcp.
func startHTTPBridgeWith(t testing.TB, data string, flags []string, env ...string) (url, token string, stderr *testenv.Buffer, cmd *exec.Cmd) {
	t.Helper()
	return startHTTPBridgeAt(t, data, freePort(t), flags, env...)
}

// startHTTPBridgeAt is startHTTPBridgeWith on port.
func startHTTPBridgeAt(t testing.TB, data string, port int, flags []string, env ...string) (url, token string, stderr *testenv.Buffer, cmd *exec.Cmd) {
	t.Helper()
	tok, err := exec.Command(tbBin, "--data", data, "token").Output()
	if err != nil {
		t.Fatal(err)
	}
	stderr = &testenv.Buffer{}
	cmd = exec.Command(tbBin, append([]string{"--data", data, "--log-level", "warn", "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port)}, flags...)...)
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), env...)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	url = fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	eventually(t, 10*time.Second, "the front door listens", func() bool {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err == nil
	})
	return url, strings.TrimSpace(string(tok)), stderr, cmd
}

func portOf(url string) int {
	var port int
	fmt.Sscanf(url[strings.LastIndex(url, ":")+1:], "%d/mcp", &port)
	return port
}

// bearer adds the token to every request of a client.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// The HTTP front door: a go-sdk client connects by URL with the token, in
// both protocol modes, lists built-in and upstream tools and calls them,
// and every request is recorded as over stdio; requests without the token,
// with a wrong one, a foreign Host or Origin, or an oversized body are
// refused with a recorded code and reach nothing.
func TestMCPOverHTTP(t *testing.T) {
	long(t)
	everything := npmServer(t, "server-everything")
	data := filepath.Join(t.TempDir(), "data")
	cfg := writeConfig(t, fmt.Sprintf("[servers.everything]\ncommand = \"node\"\nargs = [%q, \"stdio\"]\n", everything))
	url, token, stderr, cmd := startHTTPBridge(t, data, cfg)
	port := portOf(url)
	for _, proto := range []string{"2025-06-18", ""} {
		t.Run("proto="+proto, func(t *testing.T) {
			client := sdk.NewClient(&sdk.Implementation{Name: "http-e2e", Version: "1"}, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var opts *sdk.ClientSessionOptions
			if proto != "" {
				opts = &sdk.ClientSessionOptions{ProtocolVersion: proto}
			}
			s, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1}, opts)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr.String())
			}
			defer s.Close()
			names := toolNames(t, s)
			if !slices.Contains(names, "regex_text_search") || !slices.Contains(names, "everything__echo") {
				t.Fatalf("tools over HTTP: %v", names)
			}
			b := &mcpChild{session: s, stderr: &testenv.Buffer{}, data: data}
			if _, _, code := b.call(t, "regex_text_search", map[string]any{"query": "x", "text": "x"}); code != "" {
				t.Fatal(code)
			}
			res, req, code := b.call(t, "everything__echo", map[string]any{"message": "over http"})
			if code != "" || !strings.Contains(textOf(res), "over http") {
				t.Fatalf("echo over HTTP: %s %q", code, textOf(res))
			}
			eventually(t, 5*time.Second, "the call's events", func() bool {
				out, _ := exec.Command(tbBin, "--data", data, "tail", "--request", req.String()).Output()
				return strings.Contains(string(out), "upstream.response.received") && strings.Contains(string(out), "mcp.response.sent")
			})
			// Recorded as reached over TCP (OTLP's network.transport), with
			// the session's protocol version on every request, not only
			// on initialize.
			for _, e := range requestEventsLive(t, b, req) {
				if e.Kind == events.KindMCPRequestReceived {
					if e.Attrs.Get("transport") != "tcp" || proto != "" && e.Attrs.Get("protocolVersion") != proto {
						t.Fatalf("the call's request event: %v", e.Attrs)
					}
				}
			}
		})
	}

	before := countKind(t, data, events.KindMCPRequestReceived)
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	for _, c := range []struct {
		name   string
		mutate func(r *http.Request)
		body   []byte
		status int
		code   events.Code
	}{
		{"no token", func(r *http.Request) { r.Header.Del("Authorization") }, body, 401, events.CodeUnauthenticated},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+strings.Repeat("0", 64)) }, body, 401, events.CodeUnauthenticated},
		{"foreign host", func(r *http.Request) { r.Host = fmt.Sprintf("evil.example:%d", port) }, body, 421, events.CodeForeignHost},
		{"other port", func(r *http.Request) { r.Host = "127.0.0.1:1" }, body, 421, events.CodeForeignHost},
		{"foreign origin", func(r *http.Request) { r.Header.Set("Origin", "http://evil.example") }, body, 403, events.CodeForeignOrigin},
		{"oversized", func(*http.Request) {}, bytes.Repeat([]byte("x"), 5<<20), 413, events.CodeTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, _ := http.NewRequest("POST", url, bytes.NewReader(c.body))
			r.Header.Set("Authorization", "Bearer "+token)
			r.Header.Set("Content-Type", "application/json")
			r.Header.Set("Accept", "application/json, text/event-stream")
			c.mutate(r)
			resp, err := http.DefaultClient.Do(r)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, c.status)
			}
			eventually(t, 5*time.Second, "the refusal is recorded", func() bool { return countCode(t, data, events.KindMCPHTTPRejected, c.code) > 0 })
		})
	}
	if after := countKind(t, data, events.KindMCPRequestReceived); after != before {
		t.Fatalf("refused requests reached the bridge: %d requests before, %d after", before, after)
	}
	cmd.Process.Signal(os.Interrupt)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("mcp --http did not stop cleanly on SIGINT: %v\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("mcp --http did not stop on SIGINT")
	}
}

func countKind(t *testing.T, data, kind string) int { return countCode(t, data, kind, "*") }

// countCode counts the stored events of kind with code ("*": any), through
// the live hub's tail.
func countCode(t *testing.T, data, kind string, code events.Code) int {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatalf("tail: %v", err)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, `"kind":"`+kind+`"`) && (code == "*" || strings.Contains(l, `"code":"`+string(code)+`"`)) {
			n++
		}
	}
	return n
}

// H13 and H8: another local user holding the real bearer token (captured on
// a squatted port) gets nothing from the real bridge — the connection is
// closed before it is read, recorded ForeignPeer with the uid — while the
// user's own client with the same token is served; a refused request closes
// its connection. Needs root for setpriv, as CI runs.
func TestHTTPFrontDoorShutsOtherUsersOut(t *testing.T) {
	long(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid (CI runs as root)")
	}
	data := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridge(t, data)
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	curl := func(asOther bool, auth string) (string, error) {
		args := []string{"-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
			"-H", "Accept: application/json, text/event-stream", "-d", init, url}
		if auth != "" {
			args = append(args, "-H", "Authorization: Bearer "+auth)
		}
		cmd := exec.Command("curl", args...)
		if asOther {
			cmd = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "curl"}, args...)...)
		}
		out, err := cmd.Output()
		return string(out), err
	}
	if code, err := curl(true, token); code == "200" {
		t.Fatalf("uid 65534 with the stolen token: HTTP %s %v", code, err)
	}
	if code, err := curl(false, token); code != "200" {
		t.Fatalf("the user's own client: HTTP %s %v", code, err)
	}
	eventually(t, 5*time.Second, "the refusal is recorded", func() bool {
		return countCode(t, data, events.KindMCPHTTPRejected, events.CodeForeignPeer) > 0
	})
	// A refused request (no token) ends its connection: nothing idle is
	// left for someone to pile up.
	resp, err := http.Post(url, "application/json", strings.NewReader(init))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
		t.Fatalf("a refused request: %d, Connection: close %v", resp.StatusCode, resp.Close)
	}
}

// H10: sessions a client never closed cannot lock new clients out — the
// least recently used idle one makes room; H12: an id the SDK echoes in
// another spelling (-0, "\u0041") is still answered.
func TestHTTPFrontDoorSessionsAndOddIDs(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridge(t, data)
	post := func(sid, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			t.Fatalf("POST %s: %v", body, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("POST %s: reading the answer: %v", body, err)
		}
		return resp, string(b)
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	var first string
	for i := range 65 {
		resp, body := post("", init)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("initialize %d (none ever closed): %d %s", i+1, resp.StatusCode, body)
		}
		if i == 0 {
			first = resp.Header.Get("Mcp-Session-Id")
		}
	}
	if resp, _ := post(first, `{"jsonrpc":"2.0","id":2,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the least recently used session was not the one closed: %d", resp.StatusCode)
	}
	resp, _ := post("", init)
	sid := resp.Header.Get("Mcp-Session-Id")
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{`-0`, `"\u0041"`} {
		resp, body := post(sid, `{"jsonrpc":"2.0","id":`+id+`,"method":"ping"}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"result"`) {
			t.Fatalf("ping with id %s: %d %q", id, resp.StatusCode, body)
		}
	}
	if resp, body := post(sid, `{"jsonrpc":"2.0","id":-0,"method":"ping"}`); resp.StatusCode != http.StatusOK {
		t.Fatalf("the same id again after its answer: %d %s", resp.StatusCode, body)
	}
}

// F2: a session its client abandoned (no DELETE, no connection left)
// ends after --session-idle and stops the server processes it started; its
// id then gets 404. Twin: a connected client (its GET stream open) whose
// request waits for an approval past the idle time keeps its session and
// its server.
func TestIdleHTTPSessionsEndAndStopTheirServers(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	cfg := hostileConfig(t, "[approval]\nmode = \"prompt\"\ntimeout = \"60s\"\n", map[string]string{"s": "env = { TB_FAULT_UPSTREAM = \"1\" }"})
	url, token, stderr, _ := startHTTPBridgeWith(t, data, []string{"--session-idle", "2s"}, cfg)
	post := func(sid, body string) (*http.Response, string) {
		t.Helper()
		r, _ := http.NewRequest("POST", url, strings.NewReader(body))
		r.Header.Set("Authorization", "Bearer "+token)
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			r.Header.Set("Mcp-Session-Id", sid)
			r.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	resp, _ := post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"gone","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid == "" {
		t.Fatalf("initialize: HTTP %d, no session\n%s", resp.StatusCode, stderr.String())
	}
	post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if _, body := post(sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"s__ok","arguments":{}}}`); !strings.Contains(body, "ok ") {
		t.Fatalf("the call: %s", body)
	}
	if n := countKind(t, data, events.KindUpstreamStarted); n != 1 {
		t.Fatalf("%d upstream starts, want 1", n)
	}
	eventually(t, 20*time.Second, "the abandoned session's server exits", func() bool { return countKind(t, data, events.KindUpstreamExited) == 1 })
	eventually(t, 5*time.Second, "the abandoned session is recorded ended", func() bool { return countKind(t, data, events.KindMCPSessionEnded) == 1 })
	if resp, _ := post(sid, `{"jsonrpc":"2.0","id":3,"method":"tools/list"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the ended session's id: HTTP %d, want 404", resp.StatusCode)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "here", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	done := make(chan error, 1)
	go func() {
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "s__write", Arguments: map[string]any{"text": "x"}})
		if err == nil && res.IsError {
			err = fmt.Errorf("%s", textOf(res))
		}
		done <- err
	}()
	var id string
	eventually(t, 15*time.Second, "the approval is pending", func() bool {
		out, _ := exec.Command(tbBin, "--data", data, "approvals", "list", "--json").Output()
		var list []struct{ ID string }
		json.Unmarshal(out, &list)
		if len(list) > 0 {
			id = list[0].ID
		}
		return id != ""
	})
	time.Sleep(5 * time.Second) // past the idle time, the request in flight
	if out, err := exec.Command(tbBin, "--data", data, "approvals", "approve", id).CombinedOutput(); err != nil {
		t.Fatalf("approve: %v\n%s", err, out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the approved call after the idle time: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the approved call never answered")
	}
	if n := countKind(t, data, events.KindUpstreamExited); n != 1 {
		t.Fatalf("the connected session's server stopped: %d exits", n)
	}
}

// Issue 45: a tool a server offers on the 2026-07-28 protocol only is
// listed to 2026 clients and not to 2025 ones, as each would see it
// directly (it was listed to both: the gateway's listing was the union of
// the two generations').
func TestToolsOfOneProtocolGenerationAreListedToItsClients(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	cfg := hostileConfig(t, "", map[string]string{"s": "env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_NEWONLY = \"1\" }"})
	url, token, stderr, _ := startHTTPBridge(t, data, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	list := func(version string) []string {
		t.Helper()
		s, err := sdk.NewClient(&sdk.Implementation{Name: "gen-" + version, Version: "1"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1},
			&sdk.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect %s: %v\n%s", version, err, stderr.String())
		}
		defer s.Close()
		return toolNames(t, s)
	}
	for _, step := range []struct {
		version string
		want    bool
	}{{"2026-07-28", true}, {"2025-11-25", false}, {"2026-07-28", true}, {"2025-11-25", false}} {
		names := list(step.version)
		if !slices.Contains(names, "s__ok") || slices.Contains(names, "s__newonly") != step.want {
			t.Fatalf("a %s client is listed %v; s__newonly listed: want %v", step.version, names, step.want)
		}
	}
}
