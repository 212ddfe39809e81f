package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

const loginHelp = `servers login NAME [--config FILE] [--no-browser]

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
UpstreamUnauthorized.`

// loginWait bounds how long login waits for the browser's redirect.
const loginWait = 5 * time.Minute

func runServersLogin(ctx context.Context, m *Main, name, cfgFlag string, noBrowser bool) error {
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
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", srv.OAuth.RedirectPort))
	if err != nil {
		return fmt.Errorf("the redirect port: %w (set [servers.%s.oauth] redirect_port to a free one)", err, name)
	}
	defer l.Close()
	redirect := fmt.Sprintf("http://127.0.0.1:%d/callback", l.Addr().(*net.TCPAddr).Port)
	cb := serveCallback(l, name)
	defer cb.Close()
	fetch := func(ctx context.Context, a *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		return awaitRedirect(ctx, m, cb, a.URL, name, noBrowser)
	}
	lctx, cancel := context.WithTimeout(ctx, loginWait+time.Minute)
	defer cancel()
	authorized, err := upstream.Login(lctx, upstream.LoginOptions{Name: name, Server: srv, Store: store, Redirect: redirect, Fetch: fetch,
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
	fmt.Fprintf(m.Stdout, "server %s: authorized; its tokens are stored sealed in %s and refreshed by the bridge\n", name, store.path(name))
	return nil
}

// callback is the loopback endpoint the authorization server redirects
// the operator's browser to; it serves every authorization of one login
// (a step-up asks a second time).
type callback struct {
	*http.Server
	got chan *auth.AuthorizationResult
}

func serveCallback(l net.Listener, name string) *callback {
	c := &callback{got: make(chan *auth.AuthorizationResult, 1)}
	c.Server = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		q := r.URL.Query()
		res := &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}
		if e := q.Get("error"); e != "" {
			fmt.Fprintf(w, "tracebridge: the authorization of server %s failed: %s. You can close this tab.\n", name, e)
			res = &auth.AuthorizationResult{}
		} else {
			fmt.Fprintf(w, "tracebridge: server %s is authorized. You can close this tab.\n", name)
		}
		select {
		case c.got <- res:
		default: // a redirect nobody waits for
		}
	})}
	go c.Serve(l)
	return c
}

// awaitRedirect sends the operator to the authorization URL and returns
// what the redirect to the loopback callback brought back.
func awaitRedirect(ctx context.Context, m *Main, cb *callback, authURL, name string, noBrowser bool) (*auth.AuthorizationResult, error) {
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
