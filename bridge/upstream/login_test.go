package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/config"
)

// authorizing is an MCP server and its OAuth authorization server in one:
// protected resource metadata, authorization server metadata, an
// authorization code with PKCE (S256) for the pre-registered client "tb",
// and the token it exchanges for.
type authorizing struct {
	*httptest.Server
	mu        sync.Mutex
	challenge string // the PKCE challenge of the last authorization
	scope     string
}

func newAuthorizing(t *testing.T) *authorizing {
	a := &authorizing{}
	srv := sdk.NewServer(&sdk.Implementation{Name: "authorizing", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "whoami"}, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "authorized"}}}, nil, nil
	})
	verify := func(_ context.Context, tok string, _ *http.Request) (*auth.TokenInfo, error) {
		if tok != "issued-token-9" {
			return nil, auth.ErrInvalidToken
		}
		return &auth.TokenInfo{Expiration: time.Now().Add(time.Hour)}, nil
	}
	mux := http.NewServeMux()
	a.Server = httptest.NewServer(mux)
	t.Cleanup(a.Close)
	base := a.URL
	json200 := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(v)
	}
	mux.Handle("/mcp", auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{ResourceMetadataURL: base + "/.well-known/oauth-protected-resource"})(
		sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil)))
	mux.HandleFunc("/.well-known/oauth-protected-resource", func(w http.ResponseWriter, _ *http.Request) {
		json200(w, map[string]any{"resource": base + "/mcp", "authorization_servers": []string{base}, "scopes_supported": []string{"tools"}})
	})
	mux.HandleFunc("/.well-known/oauth-authorization-server", func(w http.ResponseWriter, _ *http.Request) {
		json200(w, map[string]any{"issuer": base, "authorization_endpoint": base + "/authorize", "token_endpoint": base + "/token",
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported": []string{"S256"}, "token_endpoint_auth_methods_supported": []string{"none"}})
	})
	mux.HandleFunc("/token", func(w http.ResponseWriter, r *http.Request) {
		sum := sha256.Sum256([]byte(r.FormValue("code_verifier")))
		a.mu.Lock()
		want := a.challenge
		a.mu.Unlock()
		if r.FormValue("grant_type") != "authorization_code" || r.FormValue("code") != "the-code" || r.FormValue("client_id") != "tb" ||
			base64.RawURLEncoding.EncodeToString(sum[:]) != want {
			http.Error(w, `{"error":"invalid_grant"}`, http.StatusBadRequest)
			return
		}
		json200(w, map[string]any{"access_token": "issued-token-9", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "issued-refresh-9"})
	})
	return a
}

// fetch stands in for the operator's browser: it reads the authorization
// URL the bridge opened and comes back with a code for its state.
func (a *authorizing) fetch(_ context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	u, err := url.Parse(args.URL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	a.mu.Lock()
	a.challenge, a.scope = q.Get("code_challenge"), q.Get("scope")
	a.mu.Unlock()
	return &auth.AuthorizationResult{Code: "the-code", State: q.Get("state")}, nil
}

// `servers login` against a real authorization flow: discovery from the
// server's 401, the authorization code with PKCE through the operator's
// browser, the exchange; the grant is stored and its tokens registered
// with the redactor, and a gateway over the same store calls the server
// without asking anyone.
func TestLoginStoresAGrantTheGatewayUses(t *testing.T) {
	a := newAuthorizing(t)
	store := &grants{}
	var registered []string
	opts := LoginOptions{Name: "web", Server: config.Server{URL: a.URL + "/mcp", OAuth: &config.OAuth{ClientID: "tb", Scopes: []string{"tools"}}},
		Secrets: func([]string) (map[string]string, error) { return map[string]string{}, nil }, Store: store,
		Register: func(v string) { registered = append(registered, v) }, Warn: func(msg string, err error) { t.Errorf("%s: %v", msg, err) },
		Redirect: "http://127.0.0.1:1/callback", Fetch: a.fetch, Version: "test"}
	fetched, err := Login(context.Background(), opts)
	if err != nil || !fetched {
		t.Fatalf("login: fetched=%v %v", fetched, err)
	}
	g, _ := store.LoadGrant("web")
	if g == nil || g.Token.AccessToken != "issued-token-9" || g.ClientID != "tb" || !strings.HasSuffix(g.TokenURL, "/token") {
		t.Fatalf("the stored grant: %+v", g)
	}
	if a.scope != "tools" || !strings.Contains(strings.Join(registered, " "), "issued-token-9") {
		t.Fatalf("scope asked %q; registered with the redactor: %q", a.scope, registered)
	}
	r := newRig(t, oauthServer("web", a.URL+"/mcp"), Options{Tokens: store})
	if _, res, err := r.call(t, nil, "web__whoami", `{}`, nil); err != nil || text(res) != "authorized" {
		t.Fatalf("a call with the login's grant: %v", err)
	}
	if _, err := Login(context.Background(), LoginOptions{Name: "plain", Server: config.Server{URL: a.URL + "/mcp"}}); err == nil ||
		!strings.Contains(err.Error(), "nothing to log in to") {
		t.Fatalf("a server without [oauth]: %v", err)
	}
}
