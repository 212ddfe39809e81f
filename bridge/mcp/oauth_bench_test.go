package mcp

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/oidctest"
)

// The front door's cost of a request's credentials: the data dir's token
// (a constant-time compare) beside an access token of the [auth] issuer
// (a JWT's RS256 signature checked against the issuer's cached keys, its
// claims read), in one run: `go test ./bridge/mcp -run '^$' -bench Authenticate`.
func BenchmarkAuthenticate(b *testing.B) {
	const resource = "http://127.0.0.1:7777/mcp"
	op := oidctest.Start(b, []oidctest.User{{ID: "u-alice", Username: "alice", Password: "pw", Groups: []string{"platform"}}},
		oidctest.Client{ID: "c", Audience: []string{resource}})
	tok, err := op.Token(context.Background(), "c", "alice", "pw", "openid", "mcp")
	if err != nil {
		b.Fatal(err)
	}
	f := &front{opts: HTTPOptions{Token: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		OAuth: &OAuth{Issuer: op.Issuer, Resource: resource, Scopes: []string{"mcp"},
			Verifier: identity.NewVerifier(identity.Config{Issuer: op.Issuer, Audience: resource, Scopes: []string{"mcp"}})}}}
	for _, c := range []struct{ name, token string }{{"token=static", f.opts.Token}, {"token=jwt", tok.AccessToken}} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("POST", "/mcp", nil)
			r.Header.Set("Authorization", "Bearer "+c.token)
			if _, ref := f.authenticate(r); ref != nil { // the first fetches the keys
				b.Fatal(ref.msg)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, ref := f.authenticate(r); ref != nil {
					b.Fatal(ref.msg)
				}
			}
		})
	}
}
