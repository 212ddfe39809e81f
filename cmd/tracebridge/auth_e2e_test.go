package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/oidctest"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

var teamUsers = []oidctest.User{
	{ID: "u-alice", Username: "alice", Password: "alice-pw", Email: "alice@example.com", Groups: []string{"platform", "approvers"}},
	{ID: "u-bob", Username: "bob", Password: "bob-pw", Email: "bob@example.com", Groups: []string{"dev"}},
}

// oauthClient connects a go-sdk client to the front door as username: the
// SDK's own OAuth client finds the authorization server from the front
// door's 401 and its protected resource metadata, runs the authorization
// code flow with PKCE (the user signs in on the provider's login page)
// and sends the access token.
func oauthClient(t *testing.T, op *oidctest.Provider, url, clientID, username, password string) *sdk.ClientSession {
	t.Helper()
	h, err := auth.NewAuthorizationCodeHandler(&auth.AuthorizationCodeHandlerConfig{
		PreregisteredClient: &oauthex.ClientCredentials{ClientID: clientID},
		RedirectURL:         oidctest.RedirectURI,
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			loc, err := op.Login(ctx, args.URL, username, password)
			if err != nil {
				return nil, err
			}
			return &auth.AuthorizationResult{Code: loc.Query().Get("code"), State: loc.Query().Get("state"), Iss: loc.Query().Get("iss")}, nil
		},
		AcceptUnadvertisedIss: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: "team-" + username, Version: "1"}, nil)
	s, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: url, OAuthHandler: h, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("%s connects with OAuth: %v", username, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// [auth]: the HTTP front door as an OAuth 2.1 resource server, against a
// real OpenID provider (zitadel/oidc's, through its login page) and the
// go-sdk's own OAuth client. No token: 401 naming the protected resource
// metadata, which names the issuer; a token of another audience, expired,
// of another issuer, badly signed: 401, recorded; without the scope: 403.
// Alice's and Bob's valid tokens: their calls run, every event of each run
// names its user, and a rule by group lets Alice search and denies Bob.
// Bob cannot use Alice's session. The data dir's token still works and
// names no one (the harmless twin).
func TestFrontDoorTakesTheIssuersAccessTokens(t *testing.T) {
	long(t)
	port := freePort(t)
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	op := oidctest.Start(t, teamUsers, oidctest.Client{ID: "team-mcp", Audience: []string{resource}}, oidctest.Client{ID: "elsewhere"})
	cfg := writeConfig(t, fmt.Sprintf(`[auth]
issuer = %q
scopes = ["mcp"]

[policy.rules.platform-searches]
tools = ["regex_text_search"]
when = "!('platform' in user.groups) && user.authenticated"
effect = "deny"
message = "only the platform group searches"
`, op.Issuer))
	data := filepath.Join(t.TempDir(), "data")
	url, token, stderr, _ := startHTTPBridgeAt(t, data, port, nil, cfg)

	// Discovery: the 401 names the metadata, the metadata the issuer.
	resp, err := http.Post(url, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	metaURL := fmt.Sprintf("http://127.0.0.1:%d/.well-known/oauth-protected-resource/mcp", port)
	if ch := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != 401 || !strings.Contains(ch, `resource_metadata="`+metaURL+`"`) || !strings.Contains(ch, `scope="mcp"`) {
		t.Fatalf("no token: %d %q", resp.StatusCode, ch)
	}
	var meta oauthex.ProtectedResourceMetadata
	getJSON(t, metaURL, &meta)
	if meta.Resource != resource || len(meta.AuthorizationServers) != 1 || meta.AuthorizationServers[0] != op.Issuer {
		t.Fatalf("metadata: %+v", meta)
	}

	alice := &mcpChild{session: oauthClient(t, op, url, "team-mcp", "alice", "alice-pw"), stderr: stderr, data: data}
	bob := &mcpChild{session: oauthClient(t, op, url, "team-mcp", "bob", "bob-pw"), stderr: stderr, data: data}
	args := map[string]any{"query": "x", "text": "x"}
	_, aliceReq, code := alice.call(t, "regex_text_search", args)
	if code != "" {
		t.Fatalf("alice (platform) searched: %s", code)
	}
	_, bobReq, code := bob.call(t, "regex_text_search", args)
	if code != events.CodePolicyDenied {
		t.Fatalf("bob (dev) searched: code %q, want PolicyDenied", code)
	}
	for req, want := range map[events.ID]identity.User{aliceReq: {Subject: "u-alice", Name: "alice", Email: "alice@example.com", Groups: []string{"platform", "approvers"}, ClientID: "team-mcp", Issuer: op.Issuer},
		bobReq: {Subject: "u-bob", Name: "bob", Email: "bob@example.com", Groups: []string{"dev"}, ClientID: "team-mcp", Issuer: op.Issuer}} {
		evs := requestEventsLive(t, alice, req)
		if len(evs) < 4 {
			t.Fatalf("request %s: %d events", req, len(evs))
		}
		for _, e := range evs {
			if got := identity.FromAttrs(e.Attrs.Get); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s (%s): names %+v, want %+v", e.Kind, req, got, want)
			}
		}
	}

	// The official TypeScript SDK clients, v1 and v2, with their own OAuth
	// client: the same user gets the same answer.
	for _, flavor := range []string{"v1", "v2"} {
		for user, want := range map[string]events.Code{"alice": "", "bob": events.CodePolicyDenied} {
			got := tsCalls(t, flavor, map[string]any{"url": url, "oauth": map[string]any{"clientId": "team-mcp", "redirectUri": oidctest.RedirectURI,
				"username": user, "password": user + "-pw"}}, []map[string]any{{"name": "regex_text_search", "arguments": args}})
			if got[0].Threw != "" || got[0].Code != want {
				t.Errorf("the TypeScript %s client as %s: %+v, want code %q", flavor, user, got[0], want)
			}
		}
	}

	// Replay and the runs list name the user.
	if out, err := exec.Command(tbBin, "--data", data, "replay", bobReq.String()).Output(); err != nil || !strings.Contains(string(out), "user:    bob") {
		t.Errorf("replay of bob's call: %v\n%s", err, out)
	}
	eventually(t, 5*time.Second, "the runs list names alice", func() bool {
		out, _ := exec.Command(tbBin, "--data", data, "runs", "--json").Output()
		return strings.Contains(string(out), `"requestId":"`+aliceReq.String()+`"`) && strings.Contains(string(out), `"user":"alice"`)
	})

	// The sessions' own events name their users too.
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"u-alice", "u-bob"} {
		if !slices.ContainsFunc(strings.Split(string(out), "\n"), func(l string) bool {
			return strings.Contains(l, `"kind":"mcp.session.started"`) && strings.Contains(l, `"user.sub":"`+sub+`"`)
		}) {
			t.Errorf("no mcp.session.started names %s", sub)
		}
	}

	// The SIEM's lines name both: each call's audit document its caller.
	ecs, err := exec.Command(tbBin, "--data", data, "export", "audit", "--format", "ecs").Output()
	if err != nil {
		t.Fatalf("export audit: %v", err)
	}
	callers := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(ecs)), "\n") {
		var d struct {
			Event struct{ Action, Outcome string }
			User  struct {
				ID, Name, Email string
				Roles           []string
			}
			Labels struct {
				RequestID string `json:"request_id"`
			}
		}
		json.Unmarshal([]byte(l), &d)
		if d.Event.Action == events.KindExecutorAudit {
			callers[d.Labels.RequestID] = d.User.ID + " " + d.User.Name + " " + d.User.Email + " " + strings.Join(d.User.Roles, ",") + " " + d.Event.Outcome
		}
	}
	if callers[aliceReq.String()] != "u-alice alice alice@example.com platform,approvers success" || callers[bobReq.String()] != "u-bob bob bob@example.com dev failure" {
		t.Fatalf("the ECS documents' callers: %q\n%s", callers, ecs)
	}

	// Bob cannot use Alice's session, even with his valid token.
	bobTok, err := op.Token(context.Background(), "team-mcp", "bob", "bob-pw", "openid", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	hijack := post(t, url, bobTok.AccessToken, `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`, "Mcp-Session-Id", alice.session.ID())
	if hijack.StatusCode != http.StatusForbidden {
		t.Fatalf("bob in alice's session: %d", hijack.StatusCode)
	}
	eventually(t, 5*time.Second, "the hijack is recorded", func() bool { return countCode(t, data, events.KindMCPHTTPRejected, events.CodeSessionNotOwned) > 0 })

	// Every way a token can be wrong.
	other, err := op.Token(context.Background(), "elsewhere", "alice", "alice-pw", "openid", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	noScope, err := op.Token(context.Background(), "team-mcp", "alice", "alice-pw", "openid")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	claims := func(k string, v any) map[string]any {
		c := map[string]any{"iss": op.Issuer, "sub": "u-alice", "aud": resource, "exp": now + 300, "scope": "mcp"}
		c[k] = v
		return c
	}
	before := countKind(t, data, events.KindMCPRequestReceived)
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for name, c := range map[string]struct {
		token  string
		status int
		code   events.Code
	}{
		"another audience": {other.AccessToken, 401, events.CodeUnauthenticated},
		"expired":          {op.Sign(claims("exp", now-600)), 401, events.CodeUnauthenticated},
		"another issuer":   {op.Sign(claims("iss", "http://127.0.0.1:1")), 401, events.CodeUnauthenticated},
		"bad signature":    {op.SignForeign(claims("sub", "u-alice")), 401, events.CodeUnauthenticated},
		"no scope":         {noScope.AccessToken, 403, events.CodeInsufficientScope},
	} {
		resp := post(t, url, c.token, initialize)
		if resp.StatusCode != c.status || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("%s: %d %q, want %d with the metadata", name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), c.status)
		}
	}
	for _, code := range []events.Code{events.CodeUnauthenticated, events.CodeInsufficientScope} {
		eventually(t, 5*time.Second, string(code)+" recorded", func() bool { return countCode(t, data, events.KindMCPHTTPRejected, code) > 0 })
	}
	if after := countKind(t, data, events.KindMCPRequestReceived); after != before {
		t.Fatalf("refused tokens reached the bridge: %d requests before, %d after", before, after)
	}
	// A forged token that is otherwise right passes: the refusals above
	// are for what each changed, not for being signed by the test.
	if resp := post(t, url, op.Sign(claims("sub", "u-alice")), initialize); resp.StatusCode != 200 {
		t.Fatalf("a well-formed token of the issuer: %d", resp.StatusCode)
	}

	// The data dir's token: the one local user, named by no one.
	local := &mcpChild{stderr: &testenv.Buffer{}, data: data}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	local.session, err = sdk.NewClient(&sdk.Implementation{Name: "local", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.session.Close()
	_, req, code := local.call(t, "regex_text_search", args)
	if code != "" {
		t.Fatalf("the local user searched: %s", code)
	}
	for _, e := range requestEventsLive(t, local, req) {
		if u := identity.FromAttrs(e.Attrs.Get); !u.IsZero() {
			t.Fatalf("%s of the local user's call names %+v", e.Kind, u)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// post sends one JSON-RPC body with the bearer token and header pairs.
func post(t *testing.T, url, token, body string, headers ...string) *http.Response {
	t.Helper()
	r, _ := http.NewRequest("POST", url, bytes.NewReader([]byte(body)))
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Set("Content-Type", "application/json")
	r.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		r.Header.Set(headers[i], headers[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// With [auth], a reverse proxy in front may run as another user: another
// user's process gets in with an access token, and not with the data dir's
// token (the machine's own user's), which only this user's processes may
// send. The twin: this user's client with the data dir's token.
func TestFrontDoorKeepsTheDataDirTokenToThisUser(t *testing.T) {
	long(t)
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid (CI runs as root)")
	}
	port := freePort(t)
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	op := oidctest.Start(t, teamUsers, oidctest.Client{ID: "team-mcp", Audience: []string{resource}})
	cfg := writeConfig(t, fmt.Sprintf("[auth]\nissuer = %q\nscopes = [\"mcp\"]\n", op.Issuer))
	data := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridgeAt(t, data, port, nil, cfg)
	tok, err := op.Token(context.Background(), "team-mcp", "alice", "alice-pw", "openid", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	const init = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	curl := func(asOther bool, bearer string) string {
		args := []string{"-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}", "-H", "Content-Type: application/json",
			"-H", "Accept: application/json, text/event-stream", "-H", "Authorization: Bearer " + bearer, "-d", init, url}
		cmd := exec.Command("curl", args...)
		if asOther {
			cmd = exec.Command("setpriv", append([]string{"--reuid=65534", "--regid=65534", "--clear-groups", "curl"}, args...)...)
		}
		out, _ := cmd.Output()
		return string(out)
	}
	for _, c := range []struct {
		other  bool
		bearer string
		want   string
	}{{true, token, "401"}, {true, tok.AccessToken, "200"}, {false, token, "200"}, {false, tok.AccessToken, "200"}} {
		if got := curl(c.other, c.bearer); got != c.want {
			t.Errorf("another user %v, the data dir's token %v: HTTP %s, want %s", c.other, c.bearer == token, got, c.want)
		}
	}
}

// An issuer whose access tokens are opaque: the front door asks it about
// each (RFC 7662, with its own client, whose secret comes from the
// environment), and the call runs as the user it names.
func TestFrontDoorIntrospectsOpaqueTokens(t *testing.T) {
	long(t)
	port := freePort(t)
	resource := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	op := oidctest.Start(t, teamUsers, oidctest.Client{ID: "opaque-mcp", Audience: []string{resource, "front-door"}, Opaque: true},
		oidctest.Client{ID: "front-door", Secret: "fd-secret"})
	cfg := writeConfig(t, fmt.Sprintf(`[auth]
issuer = %q
scopes = ["mcp"]
introspection_client_id = "front-door"
introspection_client_secret = "${secret:fd}"

[secrets.fd]
env = "TB_FRONT_DOOR_SECRET"
`, op.Issuer))
	data := filepath.Join(t.TempDir(), "data")
	url, _, stderr, _ := startHTTPBridgeAt(t, data, port, nil, cfg, "TB_FRONT_DOOR_SECRET=fd-secret")
	defer func() {
		if t.Failed() {
			out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "50", "--json").Output()
			t.Log(string(out))
		}
	}()
	alice := &mcpChild{session: oauthClient(t, op, url, "opaque-mcp", "alice", "alice-pw"), stderr: stderr, data: data}
	_, req, code := alice.call(t, "regex_text_search", map[string]any{"query": "x", "text": "x"})
	if code != "" {
		t.Fatalf("alice's call with an opaque token: %s", code)
	}
	for _, e := range requestEventsLive(t, alice, req) {
		if u := identity.FromAttrs(e.Attrs.Get); u.Subject != "u-alice" || u.Name != "alice" {
			t.Fatalf("%s names %+v", e.Kind, u)
		}
	}
	if resp := post(t, url, "an-opaque-token-nobody-issued", `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != 401 {
		t.Fatalf("an unknown opaque token: %d", resp.StatusCode)
	}
}

// config check says whether [auth]'s issuer answers from here, and what
// to register at it for the UI's sign-in; an issuer nothing answers at is
// a warning naming the code the front door would refuse with.
func TestConfigCheckReadsTheIssuer(t *testing.T) {
	op := oidctest.Start(t, teamUsers)
	for issuer, want := range map[string]string{
		op.Issuer:            "auth: issuer " + op.Issuer + " answers (keys " + op.Issuer + "/keys)",
		"http://127.0.0.1:1": "IssuerUnreachable",
	} {
		path, _ := strings.CutPrefix(writeConfig(t, fmt.Sprintf("[auth]\nissuer = %q\nui_client_id = \"ui\"\nui_origin = \"http://tb-team.localhost:7088\"\n[auth.roles]\nviewer = [\"dev\"]\n", issuer)), "TRACEBRIDGE_CONFIG=")
		out, err := exec.Command(tbBin, "config", "check", path).CombinedOutput()
		if err != nil || !strings.Contains(string(out), want) || !strings.Contains(string(out), "register the redirect URI http://tb-team.localhost:7088/auth/callback") {
			t.Errorf("config check with issuer %s: %v\n%s", issuer, err, out)
		}
	}
}
