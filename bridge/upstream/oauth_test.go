package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/tracebridge/tracebridge/events"
)

// grants is a TokenStore in memory (the bridge's own seals them in the
// data dir; what is tested here is what the gateway does with them).
type grants struct {
	mu sync.Mutex
	m  map[string]*Grant
}

func (s *grants) LoadGrant(server string) (*Grant, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if g := s.m[server]; g != nil {
		c := *g
		return &c, nil
	}
	return nil, nil
}

func (s *grants) SaveGrant(server string, g *Grant) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]*Grant{}
	}
	c := *g
	s.m[server] = &c
	return nil
}

// protected is an MCP server over streamable HTTP behind bearer tokens:
// /mcp takes a token with scope "read", /admin answers every token 403
// insufficient_scope for "admin"; /token refreshes refresh token
// "refresh-1" to access token "fresh-token-2".
func protected(t *testing.T) *httptest.Server {
	srv := sdk.NewServer(&sdk.Implementation{Name: "protected", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami"}, func(ctx context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "scopes " + strings.Join(req.Extra.TokenInfo.Scopes, " ")}}}, nil, nil
	})
	valid := map[string]bool{"good-token-1": true, "fresh-token-2": true}
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if !valid[tok] {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Scopes: []string{"read"}, Expiration: time.Now().Add(time.Hour)}, nil
	}
	mcp := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{Scopes: []string{"read"}})(mcp))
	mux.HandleFunc("/admin", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="read admin"`)
		http.Error(w, "insufficient scope", http.StatusForbidden)
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		if r.FormValue("grant_type") != "refresh_token" || r.FormValue("refresh_token") != "refresh-1" {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"access_token": "fresh-token-2", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "refresh-2"})
	})
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

func oauthServer(name, url string) string {
	return fmt.Sprintf("[servers.%s]\nurl = %q\n[servers.%s.oauth]\nclient_id = \"tb\"\n", name, url, name)
}

// A url server that asks for OAuth and has no stored grant answers
// UpstreamUnauthorized with the command that fixes it; once an operator's
// grant is stored, the next call uses it (no restart), and its token is a
// secret to the redactor.
func TestOAuthUpstreamUsesTheStoredGrant(t *testing.T) {
	ts := protected(t)
	store := &grants{}
	r := newRig(t, oauthServer("web", ts.URL+"/mcp"), Options{Tokens: store})
	ctx := context.Background()
	r.g.Ensure(ctx, events.ID{}, "tools/list")
	if _, ok := r.cat.Lookup("web__whoami"); ok {
		t.Fatal("an unauthorized server's tools were listed")
	}
	s := r.g.servers["web"]
	req := r.em.NewID()
	_, err := s.session(ctx, req, r.em.NewID())
	if events.CodeOf(err) != events.CodeUpstreamUnauthorized || !strings.Contains(err.Error(), "servers login") || !strings.Contains(err.Error(), "has no OAuth authorization yet") {
		t.Fatalf("connecting without a grant: %v", err)
	}

	store.SaveGrant("web", &Grant{Token: &oauth2.Token{AccessToken: "good-token-1", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)},
		ClientID: "tb", TokenURL: ts.URL + "/token", Resource: resourceOf(ts.URL + "/mcp")})
	_, res, err := r.call(t, nil, "web__whoami", `{}`, nil)
	if err != nil || text(res) != "scopes read" {
		t.Fatalf("a call after the grant was stored: %v", err)
	}
	if got := r.em.Redactor().Scrub("Bearer good-token-1"); strings.Contains(got, "good-token-1") {
		t.Fatalf("the grant's token is not redacted: %q", got)
	}
	r.em.FlushAll(ctx)
	evs, _, _ := r.node.Range(ctx, 1, 10000)
	for _, e := range evs {
		if b, _ := json.Marshal(e); strings.Contains(string(b), "good-token-1") {
			t.Fatalf("the token is in event %s", e.Kind)
		}
	}
}

// An expired access token is refreshed with the grant's refresh token,
// and the new token is stored (the next process starts from it).
func TestOAuthRefreshesAndStoresTheNewToken(t *testing.T) {
	ts := protected(t)
	store := &grants{}
	store.SaveGrant("web", &Grant{Token: &oauth2.Token{AccessToken: "stale-token-0", RefreshToken: "refresh-1", TokenType: "Bearer",
		Expiry: time.Now().Add(-time.Minute)}, ClientID: "tb", TokenURL: ts.URL + "/token", AuthStyle: oauth2.AuthStyleInParams, Resource: resourceOf(ts.URL + "/mcp")})
	r := newRig(t, oauthServer("web", ts.URL+"/mcp"), Options{Tokens: store})
	if _, res, err := r.call(t, nil, "web__whoami", `{}`, nil); err != nil || text(res) != "scopes read" {
		t.Fatalf("a call with an expired token to refresh: %v", err)
	}
	g, _ := store.LoadGrant("web")
	if g == nil || g.Token.AccessToken != "fresh-token-2" || g.Token.RefreshToken != "refresh-2" {
		t.Fatalf("the refreshed grant was not stored: %+v", g)
	}
	for _, secret := range []string{"fresh-token-2", "refresh-2"} {
		if got := r.em.Redactor().Scrub(secret); got == secret {
			t.Errorf("%s is not registered with the redactor", secret)
		}
	}
}

// A server that wants more scope than the grant holds (403
// insufficient_scope) answers UpstreamUnauthorized naming the scope, and
// the challenge is kept so that the next `servers login` asks for it.
func TestOAuthStepUpIsKeptForTheNextLogin(t *testing.T) {
	ts := protected(t)
	store := &grants{}
	store.SaveGrant("admin", &Grant{Token: &oauth2.Token{AccessToken: "good-token-1", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)},
		ClientID: "tb", TokenURL: ts.URL + "/token", Scopes: []string{"read"}, Resource: resourceOf(ts.URL + "/admin")})
	r := newRig(t, oauthServer("admin", ts.URL+"/admin"), Options{Tokens: store})
	_, err := r.g.servers["admin"].session(context.Background(), r.em.NewID(), r.em.NewID())
	if events.CodeOf(err) != events.CodeUpstreamUnauthorized || !strings.Contains(err.Error(), "needs more scope") || !strings.Contains(err.Error(), "read admin") {
		t.Fatalf("a step-up: %v", err)
	}
	g, _ := store.LoadGrant("admin")
	if g == nil || len(g.Challenge) != 1 || !strings.Contains(g.Challenge[0], "insufficient_scope") {
		t.Fatalf("the challenge was not kept for the next login: %+v", g)
	}
}

// F-O2: a grant is bound to the URL it was obtained for. Once [servers.web]
// url names another server, the stored token is sent nowhere: the call is
// UpstreamUnauthorized naming the login to run, and the new server sees
// no token. The twin: the same grant at its own URL is used (the tests
// above).
func TestOAuthGrantIsBoundToItsServerURL(t *testing.T) {
	ts := protected(t)
	var mu sync.Mutex
	seen := 0
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if strings.Contains(r.Header.Get("Authorization"), "good-token-1") {
			seen++
		}
		mu.Unlock()
		w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/.well-known/oauth-protected-resource"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
	}))
	t.Cleanup(other.Close)
	store := &grants{}
	store.SaveGrant("web", &Grant{Token: &oauth2.Token{AccessToken: "good-token-1", TokenType: "Bearer", Expiry: time.Now().Add(time.Hour)},
		ClientID: "tb", TokenURL: ts.URL + "/token", Resource: resourceOf(ts.URL + "/mcp")})
	for _, legacy := range []bool{false, true} {
		if legacy { // a grant stored before grants named their URL
			g, _ := store.LoadGrant("web")
			g.Resource = ""
			store.SaveGrant("web", g)
		}
		r := newRig(t, oauthServer("web", other.URL+"/mcp"), Options{Tokens: store})
		_, err := r.g.servers["web"].session(context.Background(), r.em.NewID(), r.em.NewID())
		if events.CodeOf(err) != events.CodeUpstreamUnauthorized || !strings.Contains(err.Error(), "servers login") || !strings.Contains(err.Error(), "no OAuth authorization for its URL") {
			t.Fatalf("legacy %v: a grant for another URL: %v", legacy, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if seen != 0 {
		t.Fatalf("the other server received the token %d time(s)", seen)
	}
}
