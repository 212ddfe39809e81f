package mcp

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/loopback"
)

// TokenVerifier checks an access token and names its user; a refusal is
// an *identity.Refusal, any other error the issuer being unreachable
// (identity.Verifier).
type TokenVerifier interface {
	Verify(ctx context.Context, token string) (identity.User, error)
}

// OAuth makes the front door an OAuth 2.1 resource server (the MCP
// authorization spec): its protected resource metadata (RFC 9728) at
// /.well-known/oauth-protected-resource[/mcp], and a 401 naming it.
type OAuth struct {
	Verifier TokenVerifier
	// Issuer is the authorization server the metadata names.
	Issuer string
	// Resource is the front door's URI: the tokens' audience, and its host
	// is a Host the front door answers besides the loopback names.
	Resource string
	// Scopes a token must grant, advertised in the metadata.
	Scopes []string
}

// metadataPath is where the protected resource metadata of /mcp is (RFC
// 9728 §3.1: the well-known path, then the resource's path).
const metadataPath = "/.well-known/oauth-protected-resource"

func (o *OAuth) metadataURL() string {
	u, _ := url.Parse(o.Resource)
	return u.Scheme + "://" + u.Host + metadataPath + strings.TrimSuffix(u.Path, "/")
}

func (o *OAuth) host() string {
	u, _ := url.Parse(o.Resource)
	return u.Host
}

// serveMetadata answers GET of the metadata.
func (o *OAuth) serveMetadata(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	b, _ := json.Marshal(struct {
		Resource               string   `json:"resource"`
		AuthorizationServers   []string `json:"authorization_servers"`
		ScopesSupported        []string `json:"scopes_supported,omitempty"`
		BearerMethodsSupported []string `json:"bearer_methods_supported"`
		ResourceName           string   `json:"resource_name"`
	}{o.Resource, []string{o.Issuer}, o.Scopes, []string{"header"}, "tracebridge"})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "max-age=300")
	w.Write(b)
}

// refusal is why a request's credentials were refused, and how to answer.
type refusal struct {
	code  events.Code
	msg   string
	oauth string // RFC 6750 error: invalid_token, insufficient_scope; "" for none sent
}

// authenticate checks the request's bearer token: the data dir's (the
// one local user: no identity) or, with OAuth, an access token (its
// user). Nothing else is let in.
func (f *front) authenticate(r *http.Request) (identity.User, *refusal) {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" { // the scheme is case-insensitive (RFC 9110 §11.1)
		if f.opts.OAuth != nil {
			return identity.User{}, &refusal{code: events.CodeUnauthenticated, msg: "an access token is required: the resource metadata names the authorization server"}
		}
		return identity.User{}, &refusal{code: events.CodeUnauthenticated, msg: "a bearer token is required: `tracebridge token` prints it"}
	}
	if subtle.ConstantTimeCompare([]byte(tok), []byte(f.opts.Token)) == 1 {
		if otherUser(r.Context()) {
			return identity.User{}, &refusal{code: events.CodeUnauthenticated, msg: "the data dir's token is for this user's own processes: from another user's, send an access token", oauth: "invalid_token"}
		}
		return identity.User{}, nil
	}
	if f.opts.OAuth == nil {
		return identity.User{}, &refusal{code: events.CodeUnauthenticated, msg: "a bearer token is required: `tracebridge token` prints it"}
	}
	u, err := f.opts.OAuth.Verifier.Verify(r.Context(), tok)
	var ref *identity.Refusal
	switch {
	case errors.As(err, &ref) && ref.Scope:
		return u, &refusal{code: events.CodeInsufficientScope, msg: ref.Reason, oauth: "insufficient_scope"}
	case errors.As(err, &ref):
		return u, &refusal{code: events.CodeUnauthenticated, msg: ref.Reason, oauth: "invalid_token"}
	case err != nil:
		return u, &refusal{code: events.CodeIssuerUnreachable, msg: err.Error()}
	}
	return u, nil
}

type otherUserKey struct{}

// ConnContext is the front door's http.Server ConnContext: it notes a
// connection from another user's process (loopback.Marked), which may not
// use the data dir's token.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if _, ok := c.(*loopback.OtherUser); ok {
		return context.WithValue(ctx, otherUserKey{}, true)
	}
	return ctx
}

func otherUser(ctx context.Context) bool { v, _ := ctx.Value(otherUserKey{}).(bool); return v }

// challenge is the WWW-Authenticate of a 401 or 403 (RFC 6750 §3, RFC
// 9728 §5.1).
func (f *front) challenge(ref *refusal) string {
	o := f.opts.OAuth
	if o == nil {
		return `Bearer realm="tracebridge"`
	}
	parts := []string{fmt.Sprintf("resource_metadata=%q", o.metadataURL())}
	if len(o.Scopes) > 0 {
		parts = append(parts, fmt.Sprintf("scope=%q", strings.Join(o.Scopes, " ")))
	}
	if ref.oauth != "" {
		parts = append(parts, fmt.Sprintf("error=%q", ref.oauth), fmt.Sprintf("error_description=%q", strings.ReplaceAll(ref.msg, `"`, "'")))
	}
	return "Bearer " + strings.Join(parts, ", ")
}
