package identity

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Config is what the front door accepts: tokens of one issuer, for one
// resource, with the scopes it requires.
type Config struct {
	// Issuer is the authorization server (its iss, exactly).
	Issuer string
	// Audience is this resource's URI (RFC 8707): a token must name it.
	Audience string
	// Scopes must all be granted.
	Scopes []string
	// GroupsClaim names the claim holding the user's groups ("groups").
	GroupsClaim string
	// JWKSURL is where the issuer's keys are; empty: its metadata says.
	JWKSURL string
	// IntrospectionClientID and IntrospectionSecret are the resource
	// server's client at the issuer: set, an opaque access token is
	// checked by asking the issuer (RFC 7662).
	IntrospectionClientID, IntrospectionSecret string
	// HTTP fetches metadata and keys. Nil: a client with a 10 s timeout.
	HTTP *http.Client
	// Now is the clock (tests). Nil: time.Now.
	Now func() time.Time
}

// Leeway is the clock skew tolerated on exp, nbf and iat.
const Leeway = 30 * time.Second

// refreshEvery bounds how often a token with a key id the set does not
// know makes the verifier fetch the issuer's keys again (rotation): an
// unauthenticated caller cannot make it fetch per request.
const refreshEvery = 10 * time.Second

// Verifier checks bearer tokens: RFC 9068 JWT access tokens signed by
// one of the issuer's keys (asymmetric algorithms only), from that issuer,
// for this audience, within their lifetime, with the required scopes.
type Verifier struct {
	cfg Config

	mu      sync.Mutex
	jwksURL string
	keys    map[string]jose.JSONWebKey // by kid
	anon    []jose.JSONWebKey          // keys without a kid
	tried   time.Time                  // the last fetch of the keys, whether it worked or not

	// cacheMu guards verified apart from mu, which a fetch of the
	// issuer's keys holds for as long as the issuer takes to answer.
	cacheMu sync.Mutex
	// verified holds the tokens accepted, by their hash, until their
	// expiry: a client sends the same token with every request, and its
	// signature costs ~140 µs to check (2-core VM, RS256) where a lookup
	// costs a hash. Refused tokens are not kept.
	verified  map[[32]byte]accepted
	endpoints Endpoints
}

type accepted struct {
	user User
	exp  time.Time
}

// maxVerified bounds the accepted tokens kept; past it they are all
// forgotten (and checked again).
const maxVerified = 4096

// NewVerifier returns a verifier; the issuer's metadata and keys are
// fetched when the first token arrives (and again when it is down).
func NewVerifier(cfg Config) *Verifier {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.HTTP == nil {
		cfg.HTTP = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Verifier{cfg: cfg, jwksURL: cfg.JWKSURL}
}

// A Refusal is why a token was refused, said so the caller can fix it;
// Scope is set when the token was valid but lacks a scope (HTTP 403, RFC
// 6750 insufficient_scope) rather than invalid (401).
type Refusal struct {
	Reason string
	Scope  bool
}

func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, a ...any) error { return &Refusal{Reason: fmt.Sprintf(format, a...)} }

var signingAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512, jose.PS256, jose.PS384, jose.PS512,
	jose.ES256, jose.ES384, jose.ES512, jose.EdDSA}

// Verify checks token and returns the user it names. A *Refusal says why
// it was refused; any other error is the issuer's keys being unreachable.
func (v *Verifier) Verify(ctx context.Context, token string) (User, error) {
	sum := sha256.Sum256([]byte(token))
	v.cacheMu.Lock()
	a, ok := v.verified[sum]
	v.cacheMu.Unlock()
	if ok && v.cfg.Now().Before(a.exp.Add(Leeway)) {
		return a.user, nil
	}
	verify := func() (User, time.Time, error) { return v.verify(ctx, token, nil) }
	if opaque(token) && v.cfg.IntrospectionClientID != "" {
		verify = func() (User, time.Time, error) { return v.introspect(ctx, token) }
	}
	u, exp, err := verify()
	if err != nil {
		return User{}, err
	}
	v.cacheMu.Lock()
	if v.verified == nil || len(v.verified) >= maxVerified {
		v.verified = map[[32]byte]accepted{}
	}
	v.verified[sum] = accepted{u, exp}
	v.cacheMu.Unlock()
	return u, nil
}

// VerifyIDToken checks an OpenID Connect ID token the UI's sign-in got
// from the token endpoint (OIDC Core §3.1.3.7): the issuer's signature,
// issuer, audience (the Config's: the UI's client id), lifetime, and the
// nonce the sign-in sent. It returns the user and when the token expires.
func (v *Verifier) VerifyIDToken(ctx context.Context, token, nonce string) (User, time.Time, error) {
	if nonce == "" {
		return User{}, time.Time{}, refuse("no nonce to check the ID token against")
	}
	return v.verify(ctx, token, &nonce)
}

// verify checks an access token, or with nonce an ID token.
func (v *Verifier) verify(ctx context.Context, token string, nonce *string) (User, time.Time, error) {
	jws, err := jose.ParseSignedCompact(token, signingAlgs)
	if err != nil {
		return User{}, time.Time{}, refuse("not a signed JWT with an asymmetric algorithm: %v", err)
	}
	if len(jws.Signatures) != 1 {
		return User{}, time.Time{}, refuse("a token carries exactly one signature")
	}
	payload, err := v.verifySignature(ctx, jws)
	if err != nil {
		return User{}, time.Time{}, err
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return User{}, time.Time{}, refuse("the token's claims are not a JSON object: %v", err)
	}
	if err := v.check(&c, nonce); err != nil {
		return User{}, time.Time{}, err
	}
	var all map[string]json.RawMessage
	json.Unmarshal(payload, &all)
	return v.userOf(&c, all), unix(*c.Exp), nil
}

// userOf is the user a token's claims name.
func (v *Verifier) userOf(c *claims, all map[string]json.RawMessage) User {
	u := User{Subject: c.Sub, Issuer: c.Iss, Email: c.Email, ClientID: c.ClientID}
	if u.ClientID == "" {
		u.ClientID = c.Azp
	}
	u.Name = firstOf(c.PreferredUsername, c.Name, c.Email)
	u.Groups = stringsOf(all[v.cfg.GroupsClaim])
	return u
}

type claims struct {
	Iss               string          `json:"iss"`
	Sub               string          `json:"sub"`
	Aud               json.RawMessage `json:"aud"`
	Exp               *float64        `json:"exp"`
	Nbf               *float64        `json:"nbf"`
	Scope             json.RawMessage `json:"scope"`
	Scp               json.RawMessage `json:"scp"`
	ClientID          string          `json:"client_id"`
	Azp               string          `json:"azp"`
	Email             string          `json:"email"`
	Name              string          `json:"name"`
	PreferredUsername string          `json:"preferred_username"`
	// Only ID tokens carry these: an ID token is not an access token.
	AtHash string `json:"at_hash"`
	CHash  string `json:"c_hash"`
	Nonce  string `json:"nonce"`
}

func (v *Verifier) check(c *claims, nonce *string) error {
	if c.Iss != v.cfg.Issuer {
		return refuse("the token was issued by %q, not by %q", c.Iss, v.cfg.Issuer)
	}
	if !slices.Contains(stringsOf(c.Aud), v.cfg.Audience) {
		return refuse("the token is not for this resource: its audience %s does not name %q (ask the issuer for a token with resource=%s)", c.Aud, v.cfg.Audience, v.cfg.Audience)
	}
	if err := v.checkLife(c); err != nil {
		return err
	}
	if c.Sub == "" {
		return refuse("the token names no subject (sub)")
	}
	if nonce != nil { // an ID token (OIDC Core §3.1.3.7)
		if subtle.ConstantTimeCompare([]byte(c.Nonce), []byte(*nonce)) != 1 {
			return refuse("the ID token's nonce is not the one this sign-in sent")
		}
		if c.Azp != "" && c.Azp != v.cfg.Audience {
			return refuse("the ID token was issued to %q (azp), not to %q", c.Azp, v.cfg.Audience)
		}
		return nil
	}
	if c.AtHash != "" || c.CHash != "" || c.Nonce != "" {
		return refuse("an ID token is not an access token: send the access token")
	}
	return v.checkScopes(c)
}

// checkLife checks exp (required) and nbf, with Leeway.
func (v *Verifier) checkLife(c *claims) error {
	now := v.cfg.Now()
	if c.Exp == nil {
		return refuse("the token has no expiry (exp)")
	}
	if exp := unix(*c.Exp); now.After(exp.Add(Leeway)) {
		return refuse("the token expired at %s: get a new one", exp.UTC().Format(time.RFC3339))
	}
	if c.Nbf != nil {
		if nbf := unix(*c.Nbf); now.Add(Leeway).Before(nbf) {
			return refuse("the token is not valid before %s", nbf.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// checkScopes checks the token grants every scope the Config requires.
func (v *Verifier) checkScopes(c *claims) error {
	granted := stringsOf(c.Scope)
	if len(granted) == 0 {
		granted = stringsOf(c.Scp)
	}
	for _, s := range v.cfg.Scopes {
		if !slices.Contains(granted, s) {
			return &Refusal{Reason: fmt.Sprintf("the token lacks the scope %q", s), Scope: true}
		}
	}
	return nil
}

func unix(f float64) time.Time { return time.Unix(int64(f), 0) }

// stringsOf reads a claim that is a string (space-separated, as scope
// is) or an array of strings.
func stringsOf(raw json.RawMessage) []string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return strings.Fields(one)
	}
	var many []string
	json.Unmarshal(raw, &many)
	return many
}

func firstOf(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// verifySignature finds the signing key by its kid (fetching the
// issuer's keys the first time, and again, at most every refreshEvery,
// when a kid is unknown: the issuer rotated) and verifies.
func (v *Verifier) verifySignature(ctx context.Context, jws *jose.JSONWebSignature) ([]byte, error) {
	kid := jws.Signatures[0].Header.KeyID
	keys, err := v.keysFor(ctx, kid)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if p, err := jws.Verify(k); err == nil {
			return p, nil
		}
	}
	if len(keys) == 0 {
		return nil, refuse("the token's key id %q is not among the issuer's keys", kid)
	}
	return nil, refuse("the token's signature does not verify with the issuer's key %q", kid)
}

func (v *Verifier) keysFor(ctx context.Context, kid string) ([]jose.JSONWebKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	find := func() []jose.JSONWebKey {
		if kid == "" {
			return v.anon
		}
		if k, ok := v.keys[kid]; ok {
			return []jose.JSONWebKey{k}
		}
		return nil
	}
	if k := find(); len(k) > 0 {
		return k, nil
	}
	if !v.tried.IsZero() && v.cfg.Now().Sub(v.tried) < refreshEvery {
		if v.keys == nil {
			return nil, fmt.Errorf("the issuer's keys could not be fetched %s ago: retrying after %s", v.cfg.Now().Sub(v.tried).Round(time.Second), refreshEvery)
		}
		return nil, nil
	}
	v.tried = v.cfg.Now()
	if err := v.fetchLocked(ctx); err != nil {
		return nil, err
	}
	return find(), nil
}

func (v *Verifier) fetchLocked(ctx context.Context) error {
	if v.jwksURL == "" {
		u, err := v.discover(ctx)
		if err != nil {
			return err
		}
		v.jwksURL = u
	}
	var set jose.JSONWebKeySet
	if err := v.getJSON(ctx, v.jwksURL, &set); err != nil {
		return fmt.Errorf("the issuer's keys (%s): %w", v.jwksURL, err)
	}
	v.keys, v.anon = map[string]jose.JSONWebKey{}, nil
	for _, k := range set.Keys {
		if k.Use != "" && k.Use != "sig" || !k.Valid() || !k.IsPublic() {
			continue
		}
		if k.KeyID == "" {
			v.anon = append(v.anon, k)
		} else {
			v.keys[k.KeyID] = k
		}
	}
	return nil
}

// Endpoints are the issuer's, from its metadata.
type Endpoints struct {
	Authorization string `json:"authorization_endpoint"`
	Token         string `json:"token_endpoint"`
	EndSession    string `json:"end_session_endpoint"`
	Introspection string `json:"introspection_endpoint"`
	JWKS          string `json:"jwks_uri"`
}

// Endpoints returns the issuer's endpoints (its metadata, read once).
func (v *Verifier) Endpoints(ctx context.Context) (Endpoints, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.endpoints.Token == "" {
		e, err := v.metadata(ctx)
		if err != nil {
			return Endpoints{}, err
		}
		v.endpoints = e
	}
	return v.endpoints, nil
}

func (v *Verifier) discover(ctx context.Context) (string, error) {
	e, err := v.metadata(ctx)
	if err != nil {
		return "", err
	}
	if e.JWKS == "" {
		return "", fmt.Errorf("the issuer's metadata has no jwks_uri")
	}
	v.endpoints = e
	return e.JWKS, nil
}

// metadata reads the issuer's metadata (RFC 8414, then OpenID Connect
// discovery) and checks it names the issuer.
func (v *Verifier) metadata(ctx context.Context) (Endpoints, error) {
	iss := strings.TrimSuffix(v.cfg.Issuer, "/")
	var errs []error
	for _, u := range []string{wellKnown(v.cfg.Issuer, "oauth-authorization-server"), iss + "/.well-known/openid-configuration"} {
		var m struct {
			Issuer string `json:"issuer"`
			Endpoints
		}
		if err := v.getJSON(ctx, u, &m); err != nil {
			errs = append(errs, err)
			continue
		}
		if m.Issuer != v.cfg.Issuer {
			return Endpoints{}, fmt.Errorf("the metadata at %s names the issuer %q, not %q", u, m.Issuer, v.cfg.Issuer)
		}
		return m.Endpoints, nil
	}
	return Endpoints{}, fmt.Errorf("the issuer's metadata: %w", errors.Join(errs...))
}

// wellKnown inserts /.well-known/NAME between an issuer's host and path
// (RFC 8414 §3.1).
func wellKnown(issuer, name string) string {
	scheme, rest, _ := strings.Cut(issuer, "://")
	host, path, _ := strings.Cut(rest, "/")
	return scheme + "://" + host + "/.well-known/" + name + strings.TrimSuffix("/"+path, "/")
}

func (v *Verifier) getJSON(ctx context.Context, u string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := v.cfg.HTTP.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}
