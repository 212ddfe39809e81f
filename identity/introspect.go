package identity

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// introspectFor bounds how long an introspected token is taken without
// asking again: the issuer may revoke an opaque token at any time.
const introspectFor = time.Minute

// opaque reports whether token is not a compact JWT (three base64url parts).
func opaque(token string) bool { return strings.Count(token, ".") != 2 }

// introspect asks the issuer about an opaque access token (RFC 7662), as
// the client Config names: active, from this issuer, for this audience
// (when the answer names one), within its lifetime, with the scopes.
func (v *Verifier) introspect(ctx context.Context, token string) (User, time.Time, error) {
	e, err := v.Endpoints(ctx)
	if err != nil {
		return User{}, time.Time{}, err
	}
	if e.Introspection == "" {
		return User{}, time.Time{}, fmt.Errorf("the issuer's metadata names no introspection_endpoint for opaque tokens")
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.Introspection, strings.NewReader(form.Encode()))
	if err != nil {
		return User{}, time.Time{}, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.cfg.IntrospectionClientID), url.QueryEscape(v.cfg.IntrospectionSecret))
	resp, err := v.cfg.HTTP.Do(req)
	if err != nil {
		return User{}, time.Time{}, fmt.Errorf("introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return User{}, time.Time{}, fmt.Errorf("introspection at %s: %s (is [auth] introspection_client_id a client of the issuer?)", e.Introspection, resp.Status)
	}
	var raw map[string]json.RawMessage
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&raw); err != nil {
		return User{}, time.Time{}, fmt.Errorf("introspection: %w", err)
	}
	var a struct {
		Active bool   `json:"active"`
		Iss    string `json:"iss"`
		claims
		Username string `json:"username"`
	}
	b, _ := json.Marshal(raw)
	json.Unmarshal(b, &a)
	if !a.Active {
		return User{}, time.Time{}, refuse("the issuer says the token is not active (expired, revoked or never issued)")
	}
	if a.Iss != "" && a.Iss != v.cfg.Issuer {
		return User{}, time.Time{}, refuse("the token was issued by %q, not by %q", a.Iss, v.cfg.Issuer)
	}
	if aud := stringsOf(a.Aud); len(aud) > 0 && !slices.Contains(aud, v.cfg.Audience) && !slices.Contains(aud, v.cfg.IntrospectionClientID) {
		return User{}, time.Time{}, refuse("the token is not for this resource: its audience %s does not name %q", a.Aud, v.cfg.Audience)
	}
	a.claims.Iss = v.cfg.Issuer
	if a.claims.Exp == nil {
		far := float64(v.cfg.Now().Add(introspectFor).Unix())
		a.claims.Exp = &far
	}
	if err := v.checkLife(&a.claims); err != nil {
		return User{}, time.Time{}, err
	}
	if a.Sub == "" {
		return User{}, time.Time{}, refuse("the token names no subject (sub)")
	}
	if err := v.checkScopes(&a.claims); err != nil {
		return User{}, time.Time{}, err
	}
	u := v.userOf(&a.claims, raw)
	if u.Name == "" {
		u.Name = a.Username
	}
	exp := unix(*a.claims.Exp)
	if soon := v.cfg.Now().Add(introspectFor); soon.Before(exp) {
		exp = soon
	}
	return u, exp, nil
}
