package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestUICredentialsStayOnItsOrigin is the cross-port attack: an AI client's
// review links to a listener another local user runs on another loopback
// port; the operator, signed in to the UI, follows it. Browsers do not keep
// cookies apart by port, so a cookie for 127.0.0.1 would reach that
// listener, which could then read the CSRF token from /approvals and
// approve an edit. The listener must receive nothing that works against
// the UI, and the review's link must be inert.
func TestUICredentialsStayOnItsOrigin(t *testing.T) {
	long(t)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "svc"), 0o755)
	os.WriteFile(filepath.Join(ws, "svc", "a.go"), []byte("package svc\n\nfunc Price() int { return 100 }\n"), 0o644)
	start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0")
	url := uiURL(t, data)
	b := startBridge(t, tbBin, data, "")

	// The other user's listener: it records what browsers send it.
	var mu sync.Mutex
	var got []http.Header
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		fmt.Fprint(w, "<html><body id=stolen>thanks</body></html>")
	})}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	evil := "http://" + l.Addr().String() + "/log"
	evilLocalhost := strings.Replace(evil, "127.0.0.1", "localhost", 1)

	review := "# Done\n\nDetails in [the build log](" + evil + ") and <" + evilLocalhost + ">.\n"
	if _, _, code := b.call(t, "present_review", map[string]any{"content": review, "mode": "replace"}); code != "" {
		t.Fatalf("present_review: %s", code)
	}

	ctx := newBrowser(t)
	var loc string
	run(t, ctx, "sign in", chromedp.Navigate(url), chromedp.WaitVisible("#runs-body", chromedp.ByQuery), chromedp.Location(&loc))
	root := strings.TrimSuffix(loc, "/runs")
	if !strings.Contains(root, ".localhost:") {
		t.Fatalf("the UI is served at %s, not at a name of its own", root)
	}
	var links int
	var text string
	run(t, ctx, "the review", chromedp.Navigate(root+"/reviews"), chromedp.WaitVisible("main", chromedp.ByQuery),
		chromedp.Evaluate(fmt.Sprintf(`[...document.querySelectorAll("a[href]")].filter(a => a.href.includes(":%d")).length`, l.Addr().(*net.TCPAddr).Port), &links),
		chromedp.Text("main", &text, chromedp.ByQuery))
	if links != 0 {
		t.Errorf("the review links to the other listener (%d live links)", links)
	}
	if !strings.Contains(text, "link to a local service removed") {
		t.Errorf("the review does not mark the removed link:\n%s", text)
	}

	// The operator copies the address by hand, or the link was live: the
	// browser goes there, on both loopback spellings.
	for _, u := range []string{evil, evilLocalhost} {
		run(t, ctx, "visit "+u, chromedp.Navigate(u), chromedp.WaitVisible("#stolen", chromedp.ByQuery))
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("the listener saw %d requests, want 2", len(got))
	}
	for _, h := range got {
		if c := h.Get("Cookie"); c != "" {
			t.Errorf("the other listener received cookies: %s", c)
		}
		// Whatever it received, replayed against the UI, opens nothing.
		for _, target := range []string{root, strings.Replace(root, root[len("http://"):strings.LastIndex(root, ":")], "127.0.0.1", 1)} {
			req, _ := http.NewRequest(http.MethodGet, target+"/approvals", nil)
			for k, v := range h {
				req.Header[k] = v
			}
			resp, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Errorf("the listener's request headers opened %s/approvals", target)
			}
		}
	}
}

// localhostTransport dials *.localhost at 127.0.0.1, as browsers do (Go's
// resolver asks DNS).
var localhostTransport = &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
	if host, port, err := net.SplitHostPort(addr); err == nil && strings.HasSuffix(host, ".localhost") {
		addr = net.JoinHostPort("127.0.0.1", port)
	}
	return (&net.Dialer{}).DialContext(ctx, network, addr)
}}

// noRedirect shows redirects instead of following them.
var noRedirect = &http.Client{Transport: localhostTransport,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
