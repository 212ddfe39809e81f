package web

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/loopback"
)

// cookieName holds the session the launch token was exchanged for.
const cookieName = "tracebridge_session"

// maxSessions bounds the sessions kept; past it the oldest are forgotten
// (their browsers open the launch URL again).
const maxSessions = 256

// csp allows this origin only: no inline or third-party script. Styles may
// be inline because Mermaid writes a <style> into every SVG it renders.
const csp = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

type ctxKey struct{}

// isAction reports whether path changes state: only POST reaches it, with
// a matching Origin and the session's CSRF token.
func isAction(path string) bool { return strings.HasPrefix(path, "/do/") }

// guard applies the access rules to every route, assets included.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin") // no-referrer would make Chromium send Origin: null on form posts
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		switch s.hostOf(r.Host) {
		case ownHost:
		case loopbackLiteral:
			// 127.0.0.1:PORT and friends: no credential is read or set
			// here (their cookies would reach every port); a page read
			// is sent to the UI's own name, token and all.
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				w.Header().Set("Cache-Control", "no-store")
				http.Redirect(w, r, s.Origin()+r.URL.RequestURI(), http.StatusTemporaryRedirect)
				return
			}
			s.reject(w, r, events.CodeForeignHost,
				"this UI answers only at "+s.Origin()+" (`tracebridge ui` prints its URL)")
			return
		default:
			s.reject(w, r, events.CodeForeignHost,
				"this UI answers only at "+s.Origin()+" (`tracebridge ui` prints its URL)")
			return
		}
		if t, ok := r.URL.Query()["token"]; ok {
			s.exchange(w, r, t[0])
			return
		}
		if s.opts.OIDC != nil && strings.HasPrefix(r.URL.Path, "/auth/") {
			next.ServeHTTP(w, r) // signing in: no session yet
			return
		}
		sid, ok := s.session(r)
		if !ok {
			if s.opts.OIDC != nil && r.Method == http.MethodGet && !isAction(r.URL.Path) && opensPage(r) {
				w.Header().Set("Cache-Control", "no-store")
				http.Redirect(w, r, "/auth/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.reject(w, r, events.CodeUnauthenticated,
				"not signed in: open the URL tracebridge printed when it started (`tracebridge ui` prints it again)")
			return
		}
		if isAction(r.URL.Path) {
			switch {
			case r.Method != http.MethodPost:
				s.reject(w, r, events.CodeMethodRefused, "this route changes state: POST only")
				return
			case r.Header.Get("Origin") != "http://"+r.Host:
				s.reject(w, r, events.CodeForeignOrigin, "a state change must come from this UI's own pages")
				return
			case !s.validCSRF(sid, csrfOf(r)):
				s.reject(w, r, events.CodeCSRFMismatch, "missing or wrong CSRF token: reload the page and try again")
				return
			}
			if role, need := s.sessionByID(sid).role, actionRole(r.URL.Path); roleRank[role] < roleRank[need] {
				s.reject(w, r, events.CodeRoleRefused, "signed in as "+role+": this needs the "+need+" role")
				return
			}
		} else if r.Method != http.MethodGet && r.Method != http.MethodHead {
			s.reject(w, r, events.CodeMethodRefused, "pages are read with GET; state changes go to /do/")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, sid)))
	})
}

// Host header classes.
const (
	foreignHost     = iota // another name or port (DNS rebinding): refused
	ownHost                // the UI's own name and port
	loopbackLiteral        // 127.0.0.1, localhost or ::1 with the UI's port
)

// hostOf classifies a Host header.
func (s *Server) hostOf(host string) int {
	name, ok := loopback.SplitHost(host, s.port)
	switch {
	case !ok:
		return foreignHost
	case name == s.name:
		return ownHost
	case loopback.IsLoopbackName(name):
		return loopbackLiteral
	}
	return foreignHost
}

// exchange trades a valid launch token for a session cookie and sends the
// browser to the same page without the token.
func (s *Server) exchange(w http.ResponseWriter, r *http.Request, token string) {
	err := errLaunchNotGET
	if r.Method == http.MethodGet {
		err = s.takeLaunch(token, s.opts.Now())
	}
	if err != nil {
		s.reject(w, r, events.CodeUnauthenticated,
			err.Error()+": a launch link signs in once, within "+LaunchTTL.String()+"; run `tracebridge ui` for a fresh one")
		return
	}
	sid := s.newSession(uiSession{role: RoleAdmin}) // the machine's own user
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: sid, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	u := *r.URL
	q := u.Query()
	q.Del("token")
	u.RawQuery = q.Encode()
	u.Scheme, u.Host = "", ""
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.RequestURI(), http.StatusSeeOther)
}

func (s *Server) session(r *http.Request) (string, bool) {
	c, err := r.Cookie(cookieName)
	if err != nil {
		return "", false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[c.Value]
	if sess == nil {
		return "", false
	}
	if !sess.expires.IsZero() && s.opts.Now().After(sess.expires) {
		delete(s.sessions, c.Value)
		return "", false
	}
	return c.Value, true
}

// csrfToken is the session's CSRF token: an HMAC of the session id.
func (s *Server) csrfToken(sid string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(sid))
	return hex.EncodeToString(m.Sum(nil))
}

func (s *Server) validCSRF(sid, token string) bool {
	return token != "" && hmac.Equal([]byte(token), []byte(s.csrfToken(sid)))
}

// csrfOf reads the token from the X-CSRF-Token header or the csrf form
// field.
func csrfOf(r *http.Request) string {
	if t := r.Header.Get("X-CSRF-Token"); t != "" {
		return t
	}
	if err := r.ParseForm(); err != nil {
		return ""
	}
	return r.PostForm.Get("csrf")
}

// reject answers with the code's HTTP status (events.HTTPStatus) and a
// message that says what to do, and
// records the refusal (never the query: it may hold a token).
func (s *Server) reject(w http.ResponseWriter, r *http.Request, code events.Code, msg string) {
	status := events.HTTPStatus(code)
	q := sha256.Sum256([]byte(r.URL.RawQuery + "\x00" + r.PostForm.Encode() + "\x00" + r.Header.Get("X-CSRF-Token")))
	key := strings.Join([]string{r.Method, r.Host, r.URL.Path, r.Header.Get("Origin"), r.Header.Get("Cookie"), hex.EncodeToString(q[:8])}, " ")
	s.rejects.Record(code, key, map[string]string{"method": r.Method, "path": r.URL.Path, "host": r.Host,
		"origin": r.Header.Get("Origin"), "remote": r.RemoteAddr, "status": http.StatusText(status), "error": msg})
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write([]byte(string(code) + ": " + msg + "\n"))
}

// sessionOf is the session id the guard admitted the request with.
func sessionOf(r *http.Request) string {
	sid, _ := r.Context().Value(ctxKey{}).(string)
	return sid
}

// opensPage reports whether r opens a page in the browser (a navigation):
// only that starts a sign-in. A favicon, a script or a live-update stream
// asked for while signed out is refused instead: it started a sign-in of its
// own, whose "next" was the favicon, and raced the page's.
func opensPage(r *http.Request) bool {
	if d := r.Header.Get("Sec-Fetch-Dest"); d != "" {
		return d == "document"
	}
	return r.URL.Path != "/favicon.ico" // a client that does not say (curl, an older browser)
}
