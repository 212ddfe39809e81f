package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	people "github.com/tracebridge/tracebridge/identity"
)

// Grant is what an OAuth authorization of a url server leaves: the token
// and what refreshing it needs. Kept sealed by a TokenStore, never in
// events or logs (the tokens are registered with the redactor).
type Grant struct {
	Token        *oauth2.Token    `json:"token"`
	ClientID     string           `json:"clientId"`
	ClientSecret string           `json:"clientSecret,omitempty"`
	AuthURL      string           `json:"authUrl"`
	TokenURL     string           `json:"tokenUrl"`
	AuthStyle    oauth2.AuthStyle `json:"authStyle"`
	Scopes       []string         `json:"scopes,omitempty"`
	// Challenge is the WWW-Authenticate of a request the server refused
	// for want of scope (step-up): the next login asks for that scope too.
	Challenge []string `json:"challenge,omitempty"`
	// Resource is the server URL the grant was obtained for (RFC 8707):
	// its tokens go to that server only. A grant for another URL (the
	// configuration changed since) is not used: the server needs a new
	// login.
	Resource string `json:"resource,omitempty"`
}

// resourceOf is a server URL as grants are bound to it: scheme and host
// lower-cased, no fragment.
func resourceOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	u.Scheme, u.Host, u.Fragment, u.RawFragment = strings.ToLower(u.Scheme), strings.ToLower(u.Host), "", ""
	return u.String()
}

// TokenStore keeps each server's grant (sealed in the data dir).
type TokenStore interface {
	LoadGrant(server string) (*Grant, error) // nil, nil: none yet
	SaveGrant(server string, g *Grant) error
}

// errNeedsLogin marks a server that asks for OAuth authorization the
// bridge does not hold: an operator authorizes once, outside any MCP
// session.
var errNeedsLogin = errors.New("authorize it with `tracebridge servers login`")

// GrantName is the name the grant of server is kept under for user: the
// server's own, or with per_user a grant of the user's (NAME@KEY).
func GrantName(server string, perUser bool, user people.User) string {
	if !perUser || user.IsZero() {
		return server
	}
	return server + "@" + user.Key()
}

// grantDeps is what an OAuth handler needs around it.
type grantDeps struct {
	resource string // the server's URL (resourceOf): grants are bound to it
	store    TokenStore
	register func(string)        // a token to the redactor
	warn     func(string, error) // a grant that could not be stored
}

// keep stores a new token of c and registers it with the redactor.
func (d grantDeps) keep(name string, c *oauth2.Config, tok *oauth2.Token) {
	d.register(tok.AccessToken)
	d.register(tok.RefreshToken)
	g := &Grant{Token: tok, ClientID: c.ClientID, ClientSecret: c.ClientSecret, AuthURL: c.Endpoint.AuthURL,
		TokenURL: c.Endpoint.TokenURL, AuthStyle: c.Endpoint.AuthStyle, Scopes: c.Scopes, Resource: d.resource}
	if err := d.store.SaveGrant(name, g); err != nil {
		d.warn("an OAuth token could not be stored: it works for this process only", err)
	}
}

// errOtherResource is a stored grant obtained for another URL than the
// server's now.
type errOtherResource struct{ had, now string }

func (e errOtherResource) Error() string {
	if e.had == "" {
		return "its stored OAuth authorization names no server URL (made before grants were bound to one), and the server is " + e.now
	}
	return "its stored OAuth authorization was obtained for " + e.had + ", and the server is now " + e.now + ": its tokens are not sent elsewhere"
}

// load reads server name's grant, refusing one bound to another URL.
func (d grantDeps) load(name string) (*Grant, error) {
	g, err := d.store.LoadGrant(name)
	if err != nil || g == nil {
		return g, err
	}
	if g.Resource != d.resource {
		return nil, errOtherResource{had: g.Resource, now: d.resource}
	}
	return g, nil
}

// stored is server name's grant as a refreshing token source that stores
// each new token; nil when there is none.
func (d grantDeps) stored(name string) (oauth2.TokenSource, error) {
	g, err := d.load(name)
	if err != nil || g == nil || g.Token == nil {
		return nil, err
	}
	d.register(g.Token.AccessToken)
	d.register(g.Token.RefreshToken)
	c := &oauth2.Config{ClientID: g.ClientID, ClientSecret: g.ClientSecret, Scopes: g.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: g.AuthURL, TokenURL: g.TokenURL, AuthStyle: g.AuthStyle}}
	return &keptSource{inner: c.TokenSource(context.Background(), g.Token), last: g.Token.AccessToken,
		keep: func(t *oauth2.Token) { d.keep(name, c, t) }}, nil
}

// loginHandler is the go-sdk OAuth handler of `servers login`: discovery,
// registration (pre-registered, client ID metadata document, or dynamic),
// authorization code with PKCE through fetch, and the exchange; the grant
// is stored.
func loginHandler(name string, o *config.OAuth, secret func(string) string, d grantDeps, redirect string,
	fetch auth.AuthorizationCodeFetcher) (*auth.AuthorizationCodeHandler, error) {
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL:              redirect,
		AuthorizationCodeFetcher: fetch,
		RequestRefreshToken:      true,
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
			d.keep(name, c, tok)
			return &keptSource{inner: c.TokenSource(ctx, tok), last: tok.AccessToken, keep: func(t *oauth2.Token) { d.keep(name, c, t) }}, nil
		},
	}
	var held []string // what the stored grant holds: a step-up asks for it and more
	if g, _ := d.load(name); g != nil {
		held = g.Scopes
	}
	hc.ScopeFilter = func(asked []string) []string {
		out := slices.Clone(o.Scopes)
		for _, s := range slices.Concat(held, asked) {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
		return out
	}
	if o.ClientID != "" {
		creds := &oauthex.ClientCredentials{ClientID: o.ClientID}
		if s := config.ExpandSecrets(o.ClientSecret, secret); s != "" {
			creds.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: s}
		}
		hc.PreregisteredClient = creds
	} else {
		if o.ClientMetadataURL != "" {
			hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		}
		hc.DynamicClientRegistrationConfig = &auth.DynamicClientRegistrationConfig{
			Metadata: &oauthex.ClientRegistrationMetadata{ClientName: "tracebridge", RedirectURIs: []string{redirect}}}
	}
	return auth.NewAuthorizationCodeHandler(hc)
}

// grantHandler is the bridge's OAuth handler of server name: the stored
// grant's tokens, refreshed and stored as they expire. When the server
// still asks for authorization (none stored, revoked, more scope), the
// call fails with UpstreamUnauthorized and the command that fixes it: an
// MCP session cannot send the operator to a browser.
type grantHandler struct {
	name string // the grant's (GrantName)
	// login is the command that authorizes it.
	login string
	d     grantDeps

	mu      sync.Mutex
	ts      oauth2.TokenSource
	access  string // the access token ts started from
	refusal error  // the last authorization refused, until taken
	other   error  // the stored grant is for another URL (errOtherResource)
}

// takeRefusal is the authorization the handler last refused (the SDK
// turns it into a bare JSON-RPC error), once.
func (h *grantHandler) takeRefusal() error {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	err := h.refusal
	h.refusal = nil
	return err
}

func (h *grantHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ts, nil
}

// load takes the stored grant when it is another than the one in use (an
// operator logged in since): true when it did.
func (h *grantHandler) load() bool {
	g, err := h.d.load(h.name)
	var other errOtherResource
	if errors.As(err, &other) {
		h.mu.Lock()
		h.other = other
		h.mu.Unlock()
		return false
	}
	if err != nil {
		h.d.warn("the stored OAuth authorization cannot be read", err)
	}
	if err != nil || g == nil || g.Token == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if g.Token.AccessToken == h.access {
		return false
	}
	ts, err := h.d.stored(h.name)
	if err != nil || ts == nil {
		return false
	}
	h.ts, h.access = ts, g.Token.AccessToken
	return true
}

func (h *grantHandler) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	resp.Body.Close()
	if h.load() {
		return nil // a newer grant: the request is sent again with it
	}
	what := "has no OAuth authorization yet"
	h.mu.Lock()
	held, other := h.access != "", h.other
	h.mu.Unlock()
	if held {
		what = "refused the stored OAuth authorization (revoked or expired)"
	}
	if other != nil {
		what = "has no OAuth authorization for its URL: " + other.Error()
	}
	challenge := resp.Header.Values("WWW-Authenticate")
	if cs, err := oauthex.ParseWWWAuthenticate(challenge); err == nil && resp.StatusCode == http.StatusForbidden {
		for _, c := range cs {
			if c.Params["error"] == "insufficient_scope" {
				what = fmt.Sprintf("needs more scope than the stored OAuth authorization holds (%s)", c.Params["scope"])
				if g, err := h.d.load(h.name); err == nil && g != nil {
					g.Challenge = challenge // the next login asks for it
					if err := h.d.store.SaveGrant(h.name, g); err != nil {
						h.d.warn("the scope a server asked for could not be stored for the next login", err)
					}
				}
			}
		}
	}
	err := fmt.Errorf("server %s %s (HTTP %d): %w", h.name, what, resp.StatusCode, errNeedsLogin)
	if h.login != "" {
		err = fmt.Errorf("%w: %s", err, h.login)
	}
	h.mu.Lock()
	h.refusal = err
	h.mu.Unlock()
	return err
}

// keptSource is a refreshing token source that stores each new token.
type keptSource struct {
	inner oauth2.TokenSource
	keep  func(*oauth2.Token)

	mu   sync.Mutex
	last string
}

func (k *keptSource) Token() (*oauth2.Token, error) {
	t, err := k.inner.Token()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	fresh := t.AccessToken != k.last
	k.last = t.AccessToken
	k.mu.Unlock()
	if fresh {
		k.keep(t)
	}
	return t, nil
}

// LoginOptions configures Login.
type LoginOptions struct {
	Name string
	// Grant is the name the grant is kept under (GrantName); empty: Name.
	Grant   string
	Server  config.Server
	Secrets func(names []string) (map[string]string, error)
	Store   TokenStore
	// Register adds a token to the redactor; Warn says what could not be
	// stored.
	Register func(string)
	Warn     func(string, error)
	// Redirect is the loopback redirect URL whose callback Fetch serves.
	Redirect string
	// Fetch sends the operator to the authorization URL and returns what
	// the redirect brought back.
	Fetch   auth.AuthorizationCodeFetcher
	Version string
}

// Login authorizes the bridge to a url server: it connects as the bridge
// would, and when the server asks for authorization the operator is sent
// through Fetch; the grant is stored. A server that needs none says so.
func Login(ctx context.Context, o LoginOptions) (authorized bool, err error) {
	if o.Server.OAuth == nil || o.Server.URL == "" {
		return false, fmt.Errorf("server %s has no [servers.%s.oauth]: nothing to log in to", o.Name, o.Name)
	}
	secrets, err := o.Secrets(o.Server.ServerSecrets())
	if err != nil {
		return false, events.Errorf(events.CodeSecretUnresolved, "server %s: %v", o.Name, err)
	}
	fetched := false
	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		fetched = true
		return o.Fetch(ctx, a)
	}
	d := grantDeps{resource: resourceOf(o.Server.URL), store: o.Store, register: o.Register, warn: o.Warn}
	grant := cmp.Or(o.Grant, o.Name)
	h, err := loginHandler(grant, o.Server.OAuth, func(n string) string { return secrets[n] }, d, o.Redirect, fetch)
	if err != nil {
		return false, err
	}
	// A step-up the bridge was refused for: authorize for that scope now,
	// as the SDK would have mid-call.
	if g, err := d.load(grant); err == nil && g != nil && len(g.Challenge) > 0 {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.Server.URL, nil)
		if err != nil {
			return false, err
		}
		refused := &http.Response{StatusCode: http.StatusForbidden, Header: http.Header{"Www-Authenticate": g.Challenge}, Body: http.NoBody, Request: req}
		if err := h.Authorize(ctx, req, refused); err != nil {
			return fetched, fmt.Errorf("server %s: authorizing the scope it asked for: %w", o.Name, err)
		}
	}
	headers := &headerTransport{headers: map[string]string{}}
	for k, v := range o.Server.Headers {
		headers.headers[k] = config.ExpandSecrets(v, func(n string) string { return secrets[n] })
	}
	if u, err := url.Parse(o.Server.URL); err == nil {
		headers.origin = origin(u)
	}
	t := &sdk.StreamableClientTransport{Endpoint: o.Server.URL, HTTPClient: &http.Client{Transport: headers}, OAuthHandler: h}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "tracebridge", Version: o.Version}, nil).Connect(ctx, t, nil)
	if err != nil {
		return fetched, fmt.Errorf("server %s: %w", o.Name, err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fetched, fmt.Errorf("server %s: listing its tools after authorizing: %w", o.Name, err)
	}
	return fetched, nil
}

// noGrants is the store of a bridge that keeps none.
type noGrants struct{}

func (noGrants) LoadGrant(string) (*Grant, error) { return nil, nil }
func (noGrants) SaveGrant(string, *Grant) error   { return errors.New("no grant store") }
