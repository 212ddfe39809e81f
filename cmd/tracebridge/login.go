package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/internal/loopback"
)

const loginHelp = `servers login NAME [--config FILE] [--no-browser] [--user SUB --issuer URL]

Authorizes tracebridge to the url server NAME, whose [servers.NAME.oauth] says it
uses OAuth 2.1: it connects as the bridge does, and when the server asks for
authorization it opens the authorization page in your browser (or prints it:
--no-browser) and waits for the redirect to http://127.0.0.1:PORT/callback
(PORT: [servers.NAME.oauth] redirect_port, else any free port). The client is
the one configured (client_id, client_secret), or one registered on the spot
(client_metadata_url, else dynamic client registration).

The tokens are kept sealed in the data dir (keys/oauth/NAME.grant, AES-GCM under
a key of the data dir), refreshed by the bridge as they expire, and never
written to events or logs. Run it again when the server says
UpstreamUnauthorized.

With [servers.NAME.oauth] per_user = true each user the front door
authenticates ([auth]) calls the server with their own authorization, never
another's: --user SUB (their subject at the issuer; --issuer, default [auth]
issuer) authorizes for that user, signed in as them at the server's
authorization server (keys/oauth/NAME@KEY.grant). Without --user it is the
server's own, for calls of no one in particular (stdio, the data dir's token).`

// loginWait bounds how long login waits for the browser's redirect.
const loginWait = 5 * time.Minute

func runServersLogin(ctx context.Context, m *Main, name, cfgFlag string, noBrowser bool, who identity.User) error {
	cfg, err := m.loadConfigHinted(cfgFlag)
	if err != nil {
		return err
	}
	srv, ok := cfg.Servers[name]
	if !ok {
		return fmt.Errorf("no [servers.%s] in the configuration (servers: %s)", name, strings.Join(sortedKeys(cfg.Servers), ", "))
	}
	if srv.OAuth == nil {
		return fmt.Errorf("[servers.%s] has no oauth: add `oauth = {}` (or a [servers.%s.oauth] table) if it needs OAuth", name, name)
	}
	if who.Subject != "" && !srv.OAuth.PerUser {
		return usageError{fmt.Sprintf("--user: [servers.%s.oauth] has no per_user = true, so every call uses the server's own authorization", name)}
	}
	if who.Issuer == "" {
		who.Issuer = cfg.Auth.Issuer
	}
	grant := upstream.GrantName(name, srv.OAuth.PerUser, who)
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	if err := dir.Ensure(); err != nil {
		return err
	}
	store, err := openGrantStore(dir)
	if err != nil {
		return err
	}
	red, err := events.LoadSharedRedactor(dir.RedactionKey(), dir.SecretCache())
	if err != nil {
		return err
	}
	cb, err := listenCallback(srv.OAuth.RedirectPort, name, m.Stderr)
	if err != nil {
		return err
	}
	defer cb.Close()
	redirect := cb.url
	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return awaitRedirect(ctx, m, cb, a.URL, name, noBrowser)
	}
	lctx, cancel := context.WithTimeout(ctx, loginWait+time.Minute)
	defer cancel()
	authorized, err := upstream.Login(lctx, upstream.LoginOptions{Name: name, Grant: grant, Server: srv, Store: store, Redirect: redirect, Fetch: fetch,
		Secrets:  func(names []string) (map[string]string, error) { return resolveSecrets(m, cfg, names) },
		Register: func(v string) { red.Register(v) },
		Warn:     func(msg string, err error) { fmt.Fprintf(m.Stderr, "tracebridge: %s: %v\n", msg, err) },
		Version:  Version})
	if err != nil {
		return err
	}
	if !authorized {
		fmt.Fprintf(m.Stdout, "server %s answered without asking for authorization (or a stored one still works): nothing to do\n", name)
		return nil
	}
	fmt.Fprintf(m.Stdout, "server %s: authorized; its tokens are stored sealed in %s and refreshed by the bridge\n", name, store.path(grant))
	return nil
}

// callback is the loopback endpoint the authorization server redirects
// the operator's browser to. Only this user's processes reach it (the
// authorization URL, state and all, is in the browser's argv, which every
// local user can read: another user must not deliver their own code to
// it). It answers one redirect per authorization it waits for (a step-up
// asks a second time), and only one carrying that authorization's state;
// a redirect nobody waits for, or a second one, changes nothing.
type callback struct {
	*http.Server
	url string

	mu      sync.Mutex
	waiting string // the state of the authorization waited for; "": none
	got     chan *auth.AuthorizationResult
}

// listenCallback serves the callback on 127.0.0.1:port (0: any free port).
func listenCallback(port int, name string, stderr io.Writer) (*callback, error) {
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		return nil, fmt.Errorf("the redirect port: %w (set [servers.%s.oauth] redirect_port to a free one)", err, name)
	}
	l = loopback.SameUser(l, func(addr string, uid int, err error) {
		fmt.Fprintf(stderr, "tracebridge: refused a connection to the login callback from %s: %v\n", addr, err)
	}, func() {
		fmt.Fprintf(stderr, "tracebridge: this system does not say which user connects to the login callback: any local user who reads the authorization URL could answer it first\n")
	})
	c := &callback{url: fmt.Sprintf("http://127.0.0.1:%d/callback", l.Addr().(*net.TCPAddr).Port), got: make(chan *auth.AuthorizationResult, 1)}
	c.Server = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		if !c.take(q.Get("state")) {
			http.Error(w, "tracebridge: no authorization of server "+name+" waits for this redirect (already answered, or not started by this login)", http.StatusGone)
			return
		}
		res := &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			fmt.Fprintf(w, "tracebridge: the authorization of server %s failed: %s. You can close this tab.\n", name, e)
			res = &auth.AuthorizationResult{}
		} else {
			fmt.Fprintf(w, "tracebridge: server %s is authorized. You can close this tab.\n", name)
		}
		c.got <- res
	})}
	go c.Serve(l)
	return c, nil
}

// wait arms the callback for the authorization whose URL is authURL.
func (c *callback) wait(authURL string) error {
	u, err := url.Parse(authURL)
	if err != nil || u.Query().Get("state") == "" {
		return fmt.Errorf("the authorization URL carries no state: %s", authURL)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waiting = u.Query().Get("state")
	return nil
}

// take disarms the callback if state is the one it waits for.
func (c *callback) take(state string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting == "" || state != c.waiting {
		return false
	}
	c.waiting = ""
	return true
}

// awaitRedirect sends the operator to the authorization URL and returns
// what the redirect to the loopback callback brought back.
func awaitRedirect(ctx context.Context, m *Main, cb *callback, authURL, name string, noBrowser bool) (*auth.AuthorizationResult, error) {
	if err := cb.wait(authURL); err != nil {
		return nil, err
	}
	fmt.Fprintf(m.Stderr, "tracebridge: authorize server %s in your browser:\n  %s\n", name, authURL)
	if !noBrowser {
		if err := openBrowser(authURL); err != nil {
			fmt.Fprintf(m.Stderr, "tracebridge: could not open a browser (%v): open the URL above\n", err)
		}
	}
	select {
	case r := <-cb.got:
		if r.Code == "" {
			return nil, errors.New("the authorization server sent no code back")
		}
		return r, nil
	case <-time.After(loginWait):
		return nil, fmt.Errorf("no redirect came back within %s", loginWait)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func openBrowser(u string) error {
	switch runtime.GOOS {
	case "darwin":
		return exec.Command("open", u).Start()
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u).Start()
	}
	return exec.Command("xdg-open", u).Start()
}

// resolveSecrets reads the named secrets of cfg ([secrets.NAME] env or
// file) for a command that runs no executor.
func resolveSecrets(m *Main, cfg *config.Config, names []string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		ref, ok := cfg.Secrets[n]
		switch {
		case !ok:
			return nil, fmt.Errorf("secret %q is not defined in tracebridge.toml ([secrets.%s] with env or file)", n, n)
		case ref.Env != "":
			out[n] = m.Getenv(ref.Env)
		default:
			b, err := os.ReadFile(ref.File)
			if err != nil {
				return nil, fmt.Errorf("secret %q: %w", n, err)
			}
			out[n] = strings.TrimSpace(string(b))
		}
		if out[n] == "" {
			return nil, fmt.Errorf("secret %q is empty", n)
		}
	}
	return out, nil
}
