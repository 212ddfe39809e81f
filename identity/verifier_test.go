package identity_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/oidctest"
)

const resource = "http://127.0.0.1:7777/mcp"

var users = []oidctest.User{
	{ID: "u-alice", Username: "alice", Password: "alice-pw", Email: "alice@example.com", Groups: []string{"platform", "approvers"}},
	{ID: "u-bob", Username: "bob", Password: "bob-pw", Email: "bob@example.com", Groups: []string{"dev"}},
}

// A token the real provider issued through its login page is accepted
// and names the user; every way a token can be wrong is refused with a
// reason, and the harmless twin of each (the real token) passes.
func TestVerifierAcceptsTheIssuersTokensOnly(t *testing.T) {
	ctx := context.Background()
	p := oidctest.Start(t, users, oidctest.Client{ID: "mcp-client", Audience: []string{resource}}, oidctest.Client{ID: "other-app"})
	v := identity.NewVerifier(identity.Config{Issuer: p.Issuer, Audience: resource, Scopes: []string{"mcp"}})

	tok, err := p.Token(ctx, "mcp-client", "alice", "alice-pw", "openid", "profile", "email", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	u, err := v.Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatalf("the provider's own token was refused: %v", err)
	}
	if u.Subject != "u-alice" || u.Name != "alice" || u.Email != "alice@example.com" || !slices.Equal(u.Groups, []string{"platform", "approvers"}) || u.ClientID != "mcp-client" || u.Issuer != p.Issuer {
		t.Fatalf("user = %+v", u)
	}

	other, err := p.Token(ctx, "other-app", "bob", "bob-pw", "openid", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	noScope, err := p.Token(ctx, "mcp-client", "bob", "bob-pw", "openid")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	valid := func(over map[string]any) map[string]any {
		c := map[string]any{"iss": p.Issuer, "sub": "u-bob", "aud": []string{resource}, "exp": now + 300, "iat": now, "scope": "mcp"}
		for k, v := range over {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	if _, err := v.Verify(ctx, p.Sign(valid(nil))); err != nil {
		t.Fatalf("a token signed with the issuer's key, as it issues them, was refused: %v", err)
	}
	for name, tc := range map[string]struct {
		token string
		scope bool
	}{
		"wrong audience (another client's token)": {token: other.AccessToken},
		"missing scope":        {token: noScope.AccessToken, scope: true},
		"expired":              {token: p.Sign(valid(map[string]any{"exp": now - 120}))},
		"no expiry":            {token: p.Sign(valid(map[string]any{"exp": nil}))},
		"not yet valid":        {token: p.Sign(valid(map[string]any{"nbf": now + 600}))},
		"wrong issuer":         {token: p.Sign(valid(map[string]any{"iss": "http://evil.example"}))},
		"bad signature":        {token: p.SignForeign(valid(nil))},
		"unsigned":             {token: "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."},
		"not a JWT":            {token: "opaque-token"},
		"an ID token":          {token: tok.Extra("id_token").(string)},
		"audience as a string": {token: p.Sign(valid(map[string]any{"aud": "http://127.0.0.1:7777/other"}))},
	} {
		_, err := v.Verify(ctx, tc.token)
		var r *identity.Refusal
		if !errors.As(err, &r) {
			t.Errorf("%s: err = %v, want a refusal", name, err)
			continue
		}
		if r.Scope != tc.scope {
			t.Errorf("%s: scope refusal = %v (%s)", name, r.Scope, r.Reason)
		}
	}
}

// An issuer that is down is an error, not a refusal (the caller answers
// 503, not 401), and the verifier does not fetch per request.
func TestVerifierWithTheIssuerDown(t *testing.T) {
	v := identity.NewVerifier(identity.Config{Issuer: "http://127.0.0.1:1", Audience: resource})
	p := oidctest.Start(t, users)
	tok := p.Sign(map[string]any{"iss": "http://127.0.0.1:1", "sub": "x", "aud": resource, "exp": time.Now().Unix() + 60})
	for range 2 {
		_, err := v.Verify(context.Background(), tok)
		var r *identity.Refusal
		if err == nil || errors.As(err, &r) {
			t.Fatalf("err = %v, want the issuer's keys unreachable", err)
		}
	}
}

// A token accepted once is remembered until it expires, not after.
func TestVerifierForgetsAnExpiredToken(t *testing.T) {
	p := oidctest.Start(t, users)
	now := time.Now()
	clock := now
	v := identity.NewVerifier(identity.Config{Issuer: p.Issuer, Audience: resource, Now: func() time.Time { return clock }})
	tok := p.Sign(map[string]any{"iss": p.Issuer, "sub": "u-bob", "aud": resource, "exp": now.Unix() + 60})
	for range 2 {
		if _, err := v.Verify(context.Background(), tok); err != nil {
			t.Fatal(err)
		}
	}
	clock = now.Add(60*time.Second + identity.Leeway + time.Second)
	if _, err := v.Verify(context.Background(), tok); err == nil {
		t.Fatal("an expired token was accepted from the verifier's memory")
	}
}

// An opaque access token is asked about at the issuer (RFC 7662) by the
// resource server's own client: the user and groups come back; a token
// the issuer does not know, or one without the scope, is refused.
func TestVerifierIntrospectsOpaqueTokens(t *testing.T) {
	ctx := context.Background()
	p := oidctest.Start(t, users, oidctest.Client{ID: "opaque-client", Audience: []string{resource, "rs"}, Opaque: true},
		oidctest.Client{ID: "rs", Secret: "rs-secret"})
	v := identity.NewVerifier(identity.Config{Issuer: p.Issuer, Audience: resource, Scopes: []string{"mcp"}, IntrospectionClientID: "rs", IntrospectionSecret: "rs-secret"})
	tok, err := p.Token(ctx, "opaque-client", "alice", "alice-pw", "openid", "profile", "email", "mcp")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(tok.AccessToken, ".") == 2 {
		t.Fatalf("the provider issued a JWT, not an opaque token: %s", tok.AccessToken)
	}
	u, err := v.Verify(ctx, tok.AccessToken)
	if err != nil {
		t.Fatalf("the provider's opaque token was refused: %v", err)
	}
	if u.Subject != "u-alice" || u.Name != "alice" || !slices.Equal(u.Groups, []string{"platform", "approvers"}) {
		t.Fatalf("user = %+v", u)
	}
	noScope, err := p.Token(ctx, "opaque-client", "bob", "bob-pw", "openid")
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		token string
		scope bool
	}{"unknown to the issuer": {"not-a-token-it-issued", false}, "without the scope": {noScope.AccessToken, true}} {
		var r *identity.Refusal
		if _, err := v.Verify(ctx, tc.token); !errors.As(err, &r) || r.Scope != tc.scope {
			t.Errorf("%s: %v", name, err)
		}
	}
	// With the wrong client secret the issuer refuses to answer: an error,
	// not a verdict on the token.
	bad := identity.NewVerifier(identity.Config{Issuer: p.Issuer, Audience: resource, IntrospectionClientID: "rs", IntrospectionSecret: "wrong"})
	var r *identity.Refusal
	if _, err := bad.Verify(ctx, tok.AccessToken); err == nil || errors.As(err, &r) {
		t.Fatalf("introspection with a wrong secret: %v", err)
	}
}
