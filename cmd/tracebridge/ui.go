package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"time"

	"github.com/tracebridge/tracebridge/internal/durable"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/identity"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/web"
)

// uiFlag registers --ui on fs.
func uiFlag(fs *flag.FlagSet) *string {
	return fs.String("ui", web.DefaultAddr, "serve the operator UI on `ADDR` (127.0.0.1 only; a taken default port falls back to a free one), or off")
}

// uiInfo is run/ui.json: how `tracebridge ui` finds the running UI and
// mints a fresh launch link for it. It holds the key launch tokens are
// signed with, so it is readable by the user only, like the bus token.
type uiInfo struct {
	Origin string `json:"origin"`
	Key    string `json:"launchKey"`
	Addr   string `json:"addr"`
	PID    int    `json:"pid"`
}

// launchURL mints a fresh, single-use launch link from info.
func (info uiInfo) launchURL(now time.Time) (string, error) {
	key, err := hex.DecodeString(info.Key)
	if err != nil || len(key) == 0 || info.Origin == "" {
		return "", errors.New("it does not name the UI's origin and launch key; restart `tracebridge up` or `tracebridge serve`")
	}
	return web.LaunchURL(info.Origin, key, now), nil
}

// uiSignIn is the UI's OpenID Connect sign-in when the configuration's
// [auth] names a ui_client_id: the UI then answers at ui_origin (its
// name, and its port in place of *addr: the redirect URI the issuer
// knows must not move).
func (m *Main) uiSignIn(addr *string) (*web.OIDC, string, error) {
	cfg, err := m.loadConfig("")
	if err != nil || cfg.Auth.UIClientID == "" {
		return nil, "", nil // an invalid configuration is the bridge's to report; the UI runs without sign-in
	}
	u, err := url.Parse(cfg.Auth.Origin())
	if err != nil {
		return nil, "", err
	}
	*addr = "127.0.0.1:" + u.Port()
	a := cfg.Auth
	return &web.OIDC{ClientID: a.UIClientID, Roles: web.Roles{Viewer: a.Roles.Viewer, Approver: a.Roles.Approver, Admin: a.Roles.Admin},
		Provider: identity.NewVerifier(identity.Config{Issuer: a.Issuer, Audience: a.UIClientID, GroupsClaim: a.GroupsClaim, JWKSURL: a.JWKSURL})}, u.Hostname(), nil
}

// uiPart prepares the operator UI on addr and returns its URL ("" for
// off) and the part that serves it until its context ends (nil for off).
// The URL is printed to stderr and recorded in run/ui.json for
// `tracebridge ui`, which the part removes when it stops.
func (m *Main) uiPart(addr string, node *hub.Node, em *events.Emitter, dir hub.DataDir, hostPath string, log *slog.Logger) (string, func(context.Context) error, error) {
	if addr == "off" {
		return "", nil, nil
	}
	signin, name, err := m.uiSignIn(&addr)
	if err != nil {
		return "", nil, err
	}
	l, err := web.Listen(addr)
	if err != nil && addr == web.DefaultAddr {
		fmt.Fprintf(m.Stderr, "tracebridge: UI port %s is taken; using a free port (`tracebridge ui` prints the URL)\n", addr)
		l, err = web.Listen("127.0.0.1:0")
	}
	if err != nil {
		return "", nil, err
	}
	operator := "operator"
	if u, err := user.Current(); err == nil {
		operator = "operator:" + u.Username
	}
	client := pipe.NewClient(pipe.ClientOptions{Path: hostPath, Recorder: em, Logger: log, Timeout: 35 * time.Second})
	srv, err := web.New(web.Options{Addr: l.Addr().String(), Name: name, OIDC: signin, Log: node, Host: client, Rec: em, Version: Version,
		Logger: log, Now: m.Now, Operator: operator, Descriptors: dir.Descriptors(),
		ExportSession: func(ctx context.Context, id events.ID, w io.Writer) error {
			today, err := m.configText("") // for a log that predates the recorded configuration
			if err != nil {
				return err
			}
			s, err := exportSession(ctx, node, id, "", today, "")
			if err != nil {
				return err
			}
			return s.Encode(w)
		}})
	if err != nil {
		l.Close()
		return "", nil, err
	}
	info := uiInfo{Origin: srv.Origin(), Key: hex.EncodeToString(srv.LaunchKey()), Addr: l.Addr().String(), PID: os.Getpid()}
	b, _ := json.Marshal(info)
	if err := os.MkdirAll(filepath.Dir(dir.UIInfo()), 0o700); err != nil {
		l.Close()
		return "", nil, err
	}
	if err := durable.WriteFileAtomic(dir.UIInfo(), b, 0o600); err != nil {
		l.Close()
		return "", nil, err
	}
	url := srv.URL()
	fmt.Fprintf(m.Stderr, "tracebridge UI: %s (signs in once, within %s; `tracebridge ui` prints a fresh link)\n", url, web.LaunchTTL)
	return url, func(ctx context.Context) error {
		defer func() {
			client.Close()
			if cur, err := readUIInfo(dir); err == nil && cur.PID == info.PID {
				os.Remove(dir.UIInfo())
			}
		}()
		return srv.Serve(ctx, l)
	}, nil
}

// untilInterrupted is the part that ends a process on Ctrl-C (ctx's end).
func untilInterrupted(ctx context.Context) error {
	<-ctx.Done()
	return nil
}

func readUIInfo(dir hub.DataDir) (uiInfo, error) {
	var info uiInfo
	b, err := os.ReadFile(dir.UIInfo())
	if err != nil {
		return info, err
	}
	return info, json.Unmarshal(b, &info)
}

func runUI(ctx context.Context, m *Main, args []string) error {
	fs := m.flags("ui")
	if err := m.parse(fs, "ui [--data DIR]\n\nPrints a fresh URL of the operator UI the running `tracebridge up` or\n`tracebridge serve` of the data dir serves, with a launch token: open it in\na browser on this machine. The token signs in once, within 5 minutes: it is\nexchanged for a session cookie and leaves the address bar.", args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	dir, err := m.dataDir()
	if err != nil {
		return err
	}
	info, err := readUIInfo(dir)
	if errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no UI runs for %s: start one with `tracebridge up --root DIR` or `tracebridge serve`", dir)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", dir.UIInfo(), err)
	}
	conn, err := net.DialTimeout("tcp", info.Addr, 2*time.Second)
	if err != nil {
		return fmt.Errorf("the UI recorded in %s (pid %d, %s) does not answer; it may have crashed: start `tracebridge up` or `tracebridge serve` again", dir.UIInfo(), info.PID, info.Addr)
	}
	conn.Close()
	url, err := info.launchURL(m.Now())
	if err != nil {
		return fmt.Errorf("%s: %w", dir.UIInfo(), err)
	}
	fmt.Fprintln(m.Stdout, url)
	return nil
}
