package web

import (
	"context"
	"encoding/hex"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
)

// OIDC signs people in to the UI with OpenID Connect ([auth]
// ui_client_id): the authorization code flow with PKCE and a nonce
// against the issuer, the ID token checked, the person's role taken from
// their groups. The launch link keeps signing in the machine's own user.
type OIDC struct {
	ClientID string
	Roles    Roles
	Provider Provider
}

// Provider is the issuer as sign-in needs it (identity.Verifier, its
// audience the UI's client id).
type Provider interface {
	Endpoints(ctx context.Context) (identity.Endpoints, error)
	VerifyIDToken(ctx context.Context, token, nonce string) (identity.User, time.Time, error)
}

// Roles are the groups of each role.
type Roles struct{ Viewer, Approver, Admin []string }

// The UI's roles, each allowed what the one before is and more: a viewer
// reads; an approver decides calls and proposals (and reviews); an admin
// also accepts changed tools.
const (
	RoleViewer   = "viewer"
	RoleApprover = "approver"
	RoleAdmin    = "admin"
)

var roleRank = map[string]int{RoleViewer: 1, RoleApprover: 2, RoleAdmin: 3}

// of is u's highest role ("" for none: not let in).
func (r Roles) of(u identity.User) string {
	in := func(groups []string) bool { return slices.ContainsFunc(groups, u.InGroup) }
	switch {
	case in(r.Admin):
		return RoleAdmin
	case in(r.Approver):
		return RoleApprover
	case in(r.Viewer):
		return RoleViewer
	}
	return ""
}

// uiSession is one signed-in browser: the machine's own user (the launch
// link: no identity, every role, no expiry) or a person the issuer
// authenticated, for signinTTL at most.
type uiSession struct {
	user    identity.User
	role    string
	expires time.Time
}

// signinTTL is how long a sign-in lasts.
const signinTTL = 8 * time.Hour

// signinCookie carries a sign-in's state from /auth/login to the callback
// (Lax: the issuer's redirect is a cross-site navigation).
const signinCookie = "tracebridge_signin"

// pendingSignin is an authorization request the browser took to the
// issuer, by its state.
type pendingSignin struct {
	nonce, verifier, next string
	expires               time.Time
}

const signinWait = 10 * time.Minute

func (s *Server) oauthConfig(e identity.Endpoints) *oauth2.Config {
	return &oauth2.Config{ClientID: s.opts.OIDC.ClientID, RedirectURL: s.Origin() + "/auth/callback",
		Scopes:   []string{"openid", "profile", "email"},
		Endpoint: oauth2.Endpoint{AuthURL: e.Authorization, TokenURL: e.Token, AuthStyle: oauth2.AuthStyleInParams}}
}

// login sends the browser to the issuer.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	e, err := s.opts.OIDC.Provider.Endpoints(r.Context())
	if err != nil {
		s.reject(w, r, events.CodeIssuerUnreachable, "the sign-in provider cannot be reached: "+err.Error())
		return
	}
	state, nonce, verifier := hex.EncodeToString(randomBytes(16)), hex.EncodeToString(randomBytes(16)), oauth2.GenerateVerifier()
	s.mu.Lock()
	now := s.opts.Now()
	for k, p := range s.signins {
		if now.After(p.expires) {
			delete(s.signins, k)
		}
	}
	if len(s.signins) >= maxSessions {
		clear(s.signins)
	}
	s.signins[state] = pendingSignin{nonce: nonce, verifier: verifier, next: localPath(r.URL.Query().Get("next")), expires: now.Add(signinWait)}
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: state, Path: "/auth/", HttpOnly: true, SameSite: http.SameSiteLaxMode, MaxAge: int(signinWait.Seconds())})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, s.oauthConfig(e).AuthCodeURL(state, oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("nonce", nonce)), http.StatusSeeOther)
}

// callback takes the issuer's answer: the state must be this browser's
// (its cookie), the code is exchanged with the PKCE verifier, the ID
// token checked with the nonce, and the person let in with their role.
func (s *Server) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c, err := r.Cookie(signinCookie)
	state := q.Get("state")
	if err != nil || state == "" || c.Value != state {
		s.reject(w, r, events.CodeUnauthenticated, "this sign-in was not started by this browser: sign in again")
		return
	}
	s.mu.Lock()
	p, ok := s.signins[state]
	delete(s.signins, state)
	s.mu.Unlock()
	if !ok || s.opts.Now().After(p.expires) {
		s.reject(w, r, events.CodeUnauthenticated, "this sign-in expired or was used: sign in again")
		return
	}
	if e := q.Get("error"); e != "" {
		s.reject(w, r, events.CodeUnauthenticated, "the sign-in provider refused: "+e+" "+q.Get("error_description"))
		return
	}
	e, err := s.opts.OIDC.Provider.Endpoints(r.Context())
	if err != nil {
		s.reject(w, r, events.CodeIssuerUnreachable, "the sign-in provider cannot be reached: "+err.Error())
		return
	}
	tok, err := s.oauthConfig(e).Exchange(r.Context(), q.Get("code"), oauth2.VerifierOption(p.verifier))
	if err != nil {
		s.reject(w, r, events.CodeUnauthenticated, "the sign-in provider did not take the code: "+err.Error())
		return
	}
	raw, _ := tok.Extra("id_token").(string)
	u, exp, err := s.opts.OIDC.Provider.VerifyIDToken(r.Context(), raw, p.nonce)
	if err != nil {
		s.reject(w, r, events.CodeUnauthenticated, "the ID token was refused: "+err.Error())
		return
	}
	role := s.opts.OIDC.Roles.of(u)
	if role == "" {
		s.reject(w, r, events.CodeRoleRefused, u.Display()+" is in none of the groups [auth.roles] lets in")
		return
	}
	expires := s.opts.Now().Add(signinTTL)
	if exp.Before(expires) && exp.After(s.opts.Now()) {
		expires = exp.Add(signinTTL / 8) // the ID token's life, and a while to finish what was begun
	}
	sid := s.newSession(uiSession{user: u, role: role, expires: expires})
	http.SetCookie(w, &http.Cookie{Name: signinCookie, Value: "", Path: "/auth/", MaxAge: -1})
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	s.opts.Rec.Emit(events.Event{Kind: events.KindUISignedIn, Outcome: events.OK, Attrs: events.A(append([]string{"role", role}, u.Attrs()...)...)})
	// A page, not a redirect: the browser came from the issuer's site, and
	// a Strict cookie is not sent on a redirect that began there.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	signedIn.Execute(w, struct{ Next, Name, Role string }{p.next, u.Display(), role})
}

var signedIn = template.Must(template.New("signed-in").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="0;url={{.Next}}"><title>Signed in · tracebridge</title></head>
<body><p>Signed in as {{.Name}} ({{.Role}}). <a href="{{.Next}}">Continue</a>.</p></body></html>`))

// signOut ends the session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	delete(s.sessions, sessionOf(r))
	s.mu.Unlock()
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Write([]byte("signed out\n"))
}

// localPath is p when it is a path of this UI, else "/".
func localPath(p string) string {
	// Browsers drop tabs and newlines from URLs and read a backslash as a
	// slash: "/\t/evil.example" would leave the UI.
	if !strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") || strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == '\\' || r == 0x7f }) {
		return "/"
	}
	return p
}

// newSession keeps sess under a fresh id.
func (s *Server) newSession(sess uiSession) string {
	sid := hex.EncodeToString(randomBytes(24))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= maxSessions {
		clear(s.sessions)
	}
	s.sessions[sid] = &sess
	return sid
}

// actionRole is the least role that may take the action at path.
func actionRole(path string) string {
	switch {
	case strings.HasPrefix(path, "/do/tool/"):
		return RoleAdmin
	case path == "/do/signout":
		return RoleViewer
	}
	return RoleApprover
}

// userOf is the session of the request the guard admitted.
func (s *Server) userOf(r *http.Request) uiSession { return s.sessionByID(sessionOf(r)) }

// sessionByID is the session sid names (zero: none).
func (s *Server) sessionByID(sid string) uiSession {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[sid]; sess != nil {
		return *sess
	}
	return uiSession{}
}
