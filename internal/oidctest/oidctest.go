// Package oidctest is a test helper: a real OpenID provider (zitadel/oidc's
// example OP: discovery, JWKS, authorization code with PKCE, a login page,
// token and userinfo endpoints) on a loopback port, with the users and
// clients a test names. Its access tokens are JWTs (RFC 9068) whose
// audience holds the resources the client is configured for, and they
// carry the user's groups, email and preferred_username, as Keycloak's and
// most team IdPs' do.
package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
	"golang.org/x/oauth2"
	"golang.org/x/text/language"
)

// User is one account of the provider.
type User struct {
	ID, Username, Password, Email string
	Groups                        []string
}

// Client is a public client (PKCE, no secret) with loopback redirects: the
// MCP clients and the UI. Audience is what its access tokens are for
// besides itself (RFC 8707 resources are not read by this OP, so the test
// configures them, as an IdP admin would).
type Client struct {
	ID       string
	Audience []string
	// RedirectURIs are registered besides RedirectURI (the UI's callback
	// on its .localhost name).
	RedirectURIs []string
	// Opaque: its access tokens are opaque (checked by introspection), not
	// JWTs.
	Opaque bool
	// Secret makes it a confidential client (a resource server that
	// introspects tokens authenticates with it).
	Secret string
}

// Provider is a running OP.
type Provider struct {
	Issuer string
	store  *store
	srv    *http.Server
}

// RedirectURI is the redirect every client registers: a loopback URL
// without a port, which a native client may use with any port (RFC 8252).
const RedirectURI = "http://localhost/callback"

// Start runs a provider until the test ends.
func Start(t testing.TB, users []User, clients ...Client) *Provider {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + ln.Addr().String()
	s := &store{users: map[string]User{}, clients: map[string]Client{}}
	for _, u := range users {
		s.users[u.ID] = u
	}
	for _, c := range clients {
		s.clients[c.ID] = c
		if c.Secret != "" {
			storage.RegisterClients(storage.WebClient(c.ID, c.Secret, append([]string{"http://127.0.0.1/callback"}, c.RedirectURIs...)...))
			continue
		}
		storage.RegisterClients(storage.NativeClient(c.ID, append([]string{RedirectURI, "http://127.0.0.1/callback"}, c.RedirectURIs...)...))
	}
	s.Storage = storage.NewStorage(userStore{s})
	quiet := slog.New(slog.NewTextHandler(devNull{}, nil))
	router := exampleop.SetupServer(issuer, s, quiet, false)
	p := &Provider{Issuer: issuer, store: s, srv: &http.Server{Handler: router, ReadHeaderTimeout: 10 * time.Second}}
	go p.srv.Serve(ln)
	t.Cleanup(func() { p.srv.Close() })
	return p
}

type devNull struct{}

func (devNull) Write(b []byte) (int, error) { return len(b), nil }

// Login plays the user at the provider's login page: it follows authURL
// (the authorization request a client built) to the page, posts the
// username and password, and returns the redirect the provider answers
// with (the client's redirect URI with code and state).
func (p *Provider) Login(ctx context.Context, authURL, username, password string) (*url.URL, error) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if !strings.HasPrefix(req.URL.String(), p.Issuer) {
			return http.ErrUseLastResponse // the client's redirect: not followed
		}
		return nil
	}}
	page, err := get(ctx, c, authURL)
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`name="id" value="([^"]+)"`).FindStringSubmatch(page.body)
	if m == nil {
		return nil, fmt.Errorf("the login page (%s) has no auth request id: %.300s", page.url, page.body)
	}
	form := url.Values{"id": {m[1]}, "username": {username}, "password": {password}}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.Issuer+"/login/username", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	loc, err := resp.Location()
	if err != nil {
		return nil, fmt.Errorf("login as %s: the provider answered %s without a redirect", username, resp.Status)
	}
	return loc, nil
}

type page struct {
	url  string
	body string
}

func get(ctx context.Context, c *http.Client, u string) (page, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return page{}, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return page{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return page{}, err
	}
	return page{url: resp.Request.URL.String(), body: string(b)}, nil
}

// Sign signs claims with the provider's own key (its kid, RS256): the
// tokens a test forges (expired, another issuer) verify against its JWKS.
func (p *Provider) Sign(claims map[string]any) string {
	k, _ := p.store.SigningKey(context.Background())
	return sign(k.Key(), k.ID(), claims)
}

// SignForeign signs claims with a fresh key under the provider's kid: a
// bad signature.
func (p *Provider) SignForeign(claims map[string]any) string {
	k, _ := p.store.SigningKey(context.Background())
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return sign(other, k.ID(), claims)
}

func sign(key any, kid string, claims map[string]any) string {
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: key, KeyID: kid}},
		(&jose.SignerOptions{}).WithType("at+jwt"))
	if err != nil {
		panic(err)
	}
	b, _ := json.Marshal(claims)
	obj, err := signer.Sign(b)
	if err != nil {
		panic(err)
	}
	s, _ := obj.CompactSerialize()
	return s
}

// store is the example's in-memory storage with this test's users, its
// clients' JWT access tokens and audiences, and groups in the claims.
type store struct {
	*storage.Storage
	users   map[string]User
	clients map[string]Client
}

func (s *store) GetClientByClientID(ctx context.Context, id string) (op.Client, error) {
	c, err := s.Storage.GetClientByClientID(ctx, id)
	if err != nil {
		return nil, err
	}
	return jwtClient{c, s.clients[id].Opaque}, nil
}

// SetIntrospectionFromToken adds the user's groups to what introspection
// answers.
func (s *store) SetIntrospectionFromToken(ctx context.Context, r *oidc.IntrospectionResponse, tokenID, subject, clientID string) error {
	if err := s.Storage.SetIntrospectionFromToken(ctx, r, tokenID, subject, clientID); err != nil {
		return err
	}
	if u, ok := s.users[subject]; ok {
		r.Subject = subject // the example sets it only for the openid scope; IdPs always do
		if r.Claims == nil {
			r.Claims = map[string]any{}
		}
		r.Claims["groups"] = u.Groups
		r.Email, r.PreferredUsername = u.Email, u.Username
	}
	return nil
}

func (s *store) CreateAuthRequest(ctx context.Context, r *oidc.AuthRequest, userID string) (op.AuthRequest, error) {
	a, err := s.Storage.CreateAuthRequest(ctx, r, userID)
	return s.audience(a), err
}

func (s *store) AuthRequestByID(ctx context.Context, id string) (op.AuthRequest, error) {
	a, err := s.Storage.AuthRequestByID(ctx, id)
	return s.audience(a), err
}

func (s *store) AuthRequestByCode(ctx context.Context, code string) (op.AuthRequest, error) {
	a, err := s.Storage.AuthRequestByCode(ctx, code)
	return s.audience(a), err
}

func (s *store) audience(a op.AuthRequest) op.AuthRequest {
	if a == nil {
		return nil
	}
	return withAudience{a, append([]string{a.GetClientID()}, s.clients[a.GetClientID()].Audience...)}
}

// GetPrivateClaimsFromScopes puts the user's groups, email and name in
// the access token, and its scopes (RFC 9068 §2.2.3: the example OP
// leaves them out; scopes here are the ones besides openid, profile,
// email, phone and address).
func (s *store) GetPrivateClaimsFromScopes(ctx context.Context, userID, clientID string, scopes []string) (map[string]any, error) {
	u, ok := s.users[userID]
	if !ok {
		return nil, nil
	}
	return map[string]any{"groups": u.Groups, "email": u.Email, "preferred_username": u.Username, "scope": strings.Join(scopes, " ")}, nil
}

// SetUserinfoFromRequest adds the groups to the ID token's claims.
func (s *store) SetUserinfoFromRequest(ctx context.Context, info *oidc.UserInfo, token op.IDTokenRequest, scopes []string) error {
	if err := s.Storage.SetUserinfoFromRequest(ctx, info, token, scopes); err != nil {
		return err
	}
	if u, ok := s.users[token.GetSubject()]; ok {
		info.AppendClaims("groups", u.Groups)
	}
	return nil
}

type withAudience struct {
	op.AuthRequest
	aud []string
}

func (w withAudience) GetAudience() []string { return w.aud }

// jwtClient issues JWT access tokens and allows the scopes MCP clients ask
// for (the example allows only its own).
type jwtClient struct {
	op.Client
	opaque bool
}

func (c jwtClient) AccessTokenType() op.AccessTokenType {
	if c.opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}

func (jwtClient) IsScopeAllowed(string) bool           { return true }
func (jwtClient) IDTokenUserinfoClaimsAssertion() bool { return true }

// DevMode lets a registered http redirect URI on a name other than
// localhost (the UI's NAME.localhost) be used as registered.
func (jwtClient) DevMode() bool { return true }

type userStore struct{ s *store }

func (u userStore) GetUserByID(id string) *storage.User {
	x, ok := u.s.users[id]
	if !ok {
		return nil
	}
	return &storage.User{ID: x.ID, Username: x.Username, Password: x.Password, FirstName: x.Username, LastName: "Test",
		Email: x.Email, EmailVerified: true, PreferredLanguage: language.English}
}

func (u userStore) GetUserByUsername(name string) *storage.User {
	for _, x := range u.s.users {
		if x.Username == name {
			return u.GetUserByID(x.ID)
		}
	}
	return nil
}

func (u userStore) ExampleClientID() string { return storage.ServiceUserID }

// Token runs the authorization code flow with PKCE for clientID as the
// user username (through the login page) and returns the tokens.
func (p *Provider) Token(ctx context.Context, clientID, username, password string, scopes ...string) (*oauth2.Token, error) {
	cfg := &oauth2.Config{ClientID: clientID, RedirectURL: RedirectURI, Scopes: scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.Issuer + "/auth", TokenURL: p.Issuer + "/oauth/token", AuthStyle: oauth2.AuthStyleInParams}}
	verifier := oauth2.GenerateVerifier()
	loc, err := p.Login(ctx, cfg.AuthCodeURL("state1", oauth2.S256ChallengeOption(verifier)), username, password)
	if err != nil {
		return nil, err
	}
	code := loc.Query().Get("code")
	if code == "" {
		return nil, fmt.Errorf("the provider redirected to %s without a code", loc)
	}
	return cfg.Exchange(ctx, code, oauth2.VerifierOption(verifier))
}
