// Package identity is who made a request: the user an access token names
// (User), carried in a request's context from the door that authenticated
// it to every crossing of its run, and the front door's check of that
// token (Verifier: an OAuth 2.1 resource server's, RFC 9068 JWTs against
// the issuer's JWKS).
package identity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
)

// The attributes naming the user who made a request, on every event of
// its run (ECS user.*). An approval's decision names its decider under
// DeciderPrefix the same way.
const (
	UserPrefix    = "user."
	DeciderPrefix = "decider."

	AttrSub      = UserPrefix + "sub"
	AttrName     = UserPrefix + "name"
	AttrEmail    = UserPrefix + "email"
	AttrGroups   = UserPrefix + "groups" // comma-separated
	AttrClientID = UserPrefix + "client_id"
	AttrIssuer   = UserPrefix + "issuer"
)

// User is an authenticated person (or service), as its access token says.
type User struct {
	Subject  string   `json:"sub"`
	Issuer   string   `json:"iss,omitempty"`
	Name     string   `json:"name,omitempty"` // preferred_username, else name, else email
	Email    string   `json:"email,omitempty"`
	Groups   []string `json:"groups,omitempty"`
	ClientID string   `json:"client_id,omitempty"` // the OAuth client it used
}

// IsZero reports whether no one is named.
func (u User) IsZero() bool { return u.Subject == "" }

// InGroup reports whether the user is a member of group g.
func (u User) InGroup(g string) bool { return slices.Contains(u.Groups, g) }

// Same reports whether u and o are the same person: one issuer's subject.
func (u User) Same(o User) bool { return !u.IsZero() && u.Subject == o.Subject && u.Issuer == o.Issuer }

// Key is a short stable name for the user, fit for a file name: the
// first 16 hex digits of SHA-256 of issuer and subject.
func (u User) Key() string {
	sum := sha256.Sum256([]byte(u.Issuer + "\x00" + u.Subject))
	return hex.EncodeToString(sum[:8])
}

// Display is the name a person reads: the name, else the subject.
func (u User) Display() string {
	if u.Name != "" {
		return u.Name
	}
	return u.Subject
}

// Attrs are the user's event attributes (user.*), as key, value pairs
// (empty ones left out); none for the zero User.
func (u User) Attrs() []string { return u.AttrsAs(UserPrefix) }

// AttrsAs are the user's event attributes under prefix.
func (u User) AttrsAs(prefix string) []string {
	if u.IsZero() {
		return nil
	}
	out := []string{prefix + "sub", u.Subject}
	add := func(k, v string) {
		if v != "" {
			out = append(out, prefix+k, v)
		}
	}
	add("issuer", u.Issuer)
	add("name", u.Name)
	add("email", u.Email)
	add("groups", joinGroups(u.Groups))
	add("client_id", u.ClientID)
	return out
}

// maxGroupsAttr bounds the groups attribute: it rides on every event of
// a run, and past an attribute's 4 KiB the log would keep it as a payload
// reference. A user in more groups than fit is named with the first ones
// and "…".
const maxGroupsAttr = 2048

func joinGroups(groups []string) string {
	j := strings.Join(groups, ",")
	if len(j) <= maxGroupsAttr {
		return j
	}
	cut := strings.LastIndexByte(j[:maxGroupsAttr], ',')
	if cut < 0 {
		cut = 0
	}
	return j[:cut] + ",…"
}

// FromAttrs reads a User back from an event's attributes (get is
// events.Attrs.Get).
func FromAttrs(get func(key string) string) User { return FromAttrsAs(UserPrefix, get) }

// FromAttrsAs reads a User back from the attributes under prefix.
func FromAttrsAs(prefix string, get func(key string) string) User {
	u := User{Subject: get(prefix + "sub"), Issuer: get(prefix + "issuer"), Name: get(prefix + "name"), Email: get(prefix + "email"), ClientID: get(prefix + "client_id")}
	if g := get(prefix + "groups"); g != "" {
		u.Groups = strings.Split(g, ",")
	}
	return u
}

type ctxKey struct{}

// With returns ctx carrying u.
func With(ctx context.Context, u User) context.Context {
	if u.IsZero() {
		return ctx
	}
	return context.WithValue(ctx, ctxKey{}, u)
}

// From returns the user ctx carries, if any.
func From(ctx context.Context) (User, bool) {
	u, ok := ctx.Value(ctxKey{}).(User)
	return u, ok
}
