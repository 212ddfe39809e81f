package web

import (
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/internal/loopback"
)

// lastRejection waits for nothing: rejections are emitted before the
// answer is written, and FlushAll makes them durable.
func lastCode(t *testing.T, f *fixture, before int) events.Code {
	t.Helper()
	rs := f.rejections()
	if len(rs) <= before {
		t.Fatalf("no ui.request.rejected event was recorded")
	}
	return rs[len(rs)-1].Code
}

func TestForeignHostRefused(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	port := f.srv.port
	u, _ := url.Parse(f.url)
	for _, h := range []string{
		"evil.example:" + port,
		"127.0.0.1.nip.io:" + port,
		"localhost.:" + port,
		"127.0.0.2:" + port,
		"0x7f000001:" + port,
		"2130706433:" + port,
		"[::ffff:127.0.0.1]:" + port,
		"127.0.0.1:1" + port,                    // another port
		"127.0.0.1",                             // no port
		"tb-0000000000000000.localhost:" + port, // another UI's name
		f.srv.name + ":1" + port,                // this name, another port
		f.srv.name,                              // no port
	} {
		for _, path := range []string{"/runs", "/assets/app.js", "/events", "/?token=" + MintLaunchToken(f.srv.launchKey, time.Now())} {
			before := len(f.rejections())
			req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
			req.Host = h
			for _, ck := range c.Jar.Cookies(u) { // a signed-in browser, tricked onto another name
				req.AddCookie(ck)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusMisdirectedRequest {
				t.Errorf("Host %q %s: status %d, want 421", h, path, resp.StatusCode)
			}
			if strings.Contains(string(body), "<html") || resp.Header.Get("Set-Cookie") != "" {
				t.Errorf("Host %q %s: answered with a page or a cookie", h, path)
			}
			if code := lastCode(t, f, before); code != events.CodeForeignHost {
				t.Errorf("Host %q: recorded %s, want ForeignHost", h, code)
			}
		}
	}
	// No Host at all (HTTP/1.0): refused too.
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, "/runs", nil)
	req.Host = ""
	f.srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusMisdirectedRequest {
		t.Errorf("no Host: %d", rec.Code)
	}
	// The UI's own name passes, in either case.
	for _, h := range []string{f.srv.name + ":" + port, strings.ToUpper(f.srv.name) + ":" + port} {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/runs", nil)
		req.Host = h
		for _, ck := range c.Jar.Cookies(u) {
			req.AddCookie(ck)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("Host %q: status %d, want 200", h, resp.StatusCode)
		}
	}
	// The loopback spellings of this port read no credential and set
	// none (a cookie for 127.0.0.1 reaches every port): they send the
	// browser to the UI's own name, the launch token included.
	for _, h := range []string{"127.0.0.1:" + port, "localhost:" + port, "LOCALHOST:" + port, "[::1]:" + port} {
		for _, path := range []string{"/runs", "/?token=" + MintLaunchToken(f.srv.launchKey, time.Now())} {
			req, _ := http.NewRequest(http.MethodGet, f.url+path, nil)
			req.Host = h
			for _, ck := range c.Jar.Cookies(u) {
				req.AddCookie(ck)
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusTemporaryRedirect || resp.Header.Get("Location") != f.srv.Origin()+path {
				t.Errorf("Host %q %s: %d to %q, want 307 to %s", h, path, resp.StatusCode, resp.Header.Get("Location"), f.srv.Origin()+path)
			}
			if resp.Header.Get("Set-Cookie") != "" || strings.Contains(string(body), "<html") && !strings.Contains(string(body), "Temporary Redirect") {
				t.Errorf("Host %q %s: set a cookie or served a page", h, path)
			}
		}
		before := len(f.rejections())
		req, _ := http.NewRequest(http.MethodPost, f.url+"/do/proposal/x", strings.NewReader(""))
		req.Host = h
		req.Header.Set("Origin", "http://"+h)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("POST on Host %q: %d, want 421", h, resp.StatusCode)
		}
		if code := lastCode(t, f, before); code != events.CodeForeignHost {
			t.Errorf("POST on Host %q: recorded %s", h, code)
		}
	}
}

func TestTokenRequired(t *testing.T) {
	f := newFixture(t)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/runs", "/runs/rows", "/approvals", "/events", "/assets/app.js", "/assets/vendor/mermaid/mermaid.min.js",
		"/?token=", "/?token=wrong", "/?token=" + forged(MintLaunchToken(f.srv.launchKey, time.Now())), "/?token=" + MintLaunchToken([]byte("another key"), time.Now()), "/workspace?file=src/a.go",
		"/sessions/01M8AB0P2NMM236HKF0G5JFBXJ/session.jsonl"} { // a session file is the evidence whole: never without a session
		before := len(f.rejections())
		resp, err := anon.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s without a session: status %d, want 401", path, resp.StatusCode)
		}
		if code := lastCode(t, f, before); code != events.CodeUnauthenticated {
			t.Errorf("%s: recorded %s", path, code)
		}
	}
	// A forged cookie is not a session.
	req, _ := http.NewRequest(http.MethodGet, f.url+"/runs", nil)
	req.AddCookie(&http.Cookie{Name: cookieName, Value: hex.EncodeToString(f.srv.launchKey)})
	resp, _ := anon.Do(req)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("forged cookie: status %d", resp.StatusCode)
	}
	// The token exchange leaves the token out of the next URL, and the
	// cookie opens every route.
	c, _ := f.login()
	for _, path := range []string{"/runs", "/assets/app.js", "/approvals", "/reviews", "/workspace", "/sessions"} {
		resp, err := c.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s with a session: %d", path, resp.StatusCode)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-eval") {
			t.Errorf("%s: CSP %q", path, csp)
		}
	}
}

// TestStateChangesGuarded posts decisions the guard must refuse, and checks
// each left the proposal pending, the file unchanged and the approval
// undecided.
func TestStateChangesGuarded(t *testing.T) {
	f := newFixture(t)
	c, csrf := f.login()
	pr := f.propose("return 1", "return 2")
	ap := f.askApproval(`{"path":"x"}`)
	origin := f.url
	file := filepath.Join(f.ws, "src", "a.go")
	orig, _ := os.ReadFile(file)
	approve := url.Values{"csrf": {csrf}, "contentHash": {pr.ContentHash}, "decision": {"approve"}}
	allow := url.Values{"csrf": {csrf}, "argsHash": {ap.ArgsHash}, "decision": {"approve"}}
	without := func(v url.Values, key, value string) url.Values {
		out := url.Values{}
		for k, vs := range v {
			out[k] = vs
		}
		if value == "" {
			out.Del(key)
		} else {
			out.Set(key, value)
		}
		return out
	}
	cases := []struct {
		name, path, origin string
		form               url.Values
		code               events.Code
	}{
		{"no csrf", "/do/proposal/" + pr.ID, origin, without(approve, "csrf", ""), events.CodeCSRFMismatch},
		{"wrong csrf", "/do/proposal/" + pr.ID, origin, without(approve, "csrf", strings.Repeat("0", 64)), events.CodeCSRFMismatch},
		{"other session's csrf", "/do/proposal/" + pr.ID, origin, without(approve, "csrf", f.srv.csrfToken("someone-else")), events.CodeCSRFMismatch},
		{"foreign origin", "/do/proposal/" + pr.ID, "http://evil.example", approve, events.CodeForeignOrigin},
		{"origin on another port", "/do/proposal/" + pr.ID, "http://127.0.0.1:1", approve, events.CodeForeignOrigin},
		{"null origin", "/do/proposal/" + pr.ID, "null", approve, events.CodeForeignOrigin},
		{"no origin", "/do/proposal/" + pr.ID, "", approve, events.CodeForeignOrigin},
		{"changed content hash", "/do/proposal/" + pr.ID, origin, without(approve, "contentHash", strings.Repeat("a", 64)), events.CodeHashChanged},
		{"approval: no csrf", "/do/approval/" + ap.ID, origin, without(allow, "csrf", ""), events.CodeCSRFMismatch},
		{"approval: foreign origin", "/do/approval/" + ap.ID, "http://localhost.evil:80", allow, events.CodeForeignOrigin},
		{"approval: other arguments", "/do/approval/" + ap.ID, origin, without(allow, "argsHash", strings.Repeat("b", 64)), events.CodeHashChanged},
		{"focus: no csrf", "/do/focus", origin, url.Values{}, events.CodeCSRFMismatch},
	}
	for _, tc := range cases {
		before := len(f.rejections())
		resp := post(c, f.url, tc.path, tc.origin, tc.form)
		if resp.StatusCode < 400 {
			t.Errorf("%s: status %d, want a refusal", tc.name, resp.StatusCode)
		}
		if code := lastCode(t, f, before); code != tc.code {
			t.Errorf("%s: recorded %s, want %s", tc.name, code, tc.code)
		}
		if st := f.proposal(pr.ID).State; st != host.Pending {
			t.Fatalf("%s: the proposal became %s", tc.name, st)
		}
		if n := f.decisions(ap); n != 0 {
			t.Fatalf("%s: the approval was decided", tc.name)
		}
		if now, _ := os.ReadFile(file); string(now) != string(orig) {
			t.Fatalf("%s: the file changed", tc.name)
		}
	}

	// GET never changes state, on action routes or anywhere else; POST to a
	// page is refused too.
	for _, path := range []string{"/do/proposal/" + pr.ID + "?decision=approve&contentHash=" + pr.ContentHash + "&csrf=" + csrf,
		"/do/approval/" + ap.ID + "?decision=approve&argsHash=" + ap.ArgsHash + "&csrf=" + csrf, "/do/focus"} {
		before := len(f.rejections())
		resp, err := c.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed {
			t.Errorf("GET %s: %d", path, resp.StatusCode)
		}
		if code := lastCode(t, f, before); code != events.CodeMethodRefused {
			t.Errorf("GET %s: recorded %s", path, code)
		}
	}
	resp := post(c, f.url, "/runs", origin, url.Values{"csrf": {csrf}})
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /runs: %d", resp.StatusCode)
	}
	if st := f.proposal(pr.ID).State; st != host.Pending || f.decisions(ap) != 0 {
		t.Fatal("a GET changed state")
	}

	// The real decisions pass once; replaying them is refused.
	if resp := post(c, f.url, "/do/proposal/"+pr.ID, origin, approve); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve: %d", resp.StatusCode)
	}
	if st := f.proposal(pr.ID).State; st != host.Applied {
		t.Fatalf("approved proposal is %s", st)
	}
	applied, _ := os.ReadFile(file)
	if !strings.Contains(string(applied), "return 2") {
		t.Fatalf("file after approval: %q", applied)
	}
	if resp := post(c, f.url, "/do/approval/"+ap.ID, origin, allow); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("approve call: %d", resp.StatusCode)
	}
	before := len(f.rejections())
	for _, tc := range []struct {
		path string
		form url.Values
	}{{"/do/proposal/" + pr.ID, approve}, {"/do/proposal/" + pr.ID, without(approve, "decision", "reject")}, {"/do/approval/" + ap.ID, allow}} {
		resp := post(c, f.url, tc.path, origin, tc.form)
		if resp.StatusCode != http.StatusConflict {
			t.Errorf("replayed %s: %d, want 409", tc.path, resp.StatusCode)
		}
	}
	rs := f.rejections()[before:]
	if len(rs) != 3 {
		t.Fatalf("replays recorded %d rejections", len(rs))
	}
	for _, e := range rs {
		if e.Code != events.CodeNotPending {
			t.Errorf("replay recorded %s, want NotPending", e.Code)
		}
	}
	if f.decisions(ap) != 1 {
		t.Errorf("approval decided %d times", f.decisions(ap))
	}
	if now, _ := os.ReadFile(file); string(now) != string(applied) {
		t.Error("a replayed approval changed the file")
	}
}

// TestHashChangedAfterEdit: the file changes under a pending proposal; the
// page's preview says so and approving applies nothing.
func TestProposalDriftShownAndNotApplied(t *testing.T) {
	f := newFixture(t)
	c, csrf := f.login()
	pr := f.propose("return 1", "return 3")
	file := filepath.Join(f.ws, "src", "a.go")
	os.WriteFile(file, []byte("package a\n\nfunc A() int { return 1 } // edited\n"), 0o644)
	resp, err := c.Get(f.url + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "Would fail now") || !strings.Contains(string(body), "Drift") {
		t.Errorf("the approvals page does not warn of the drift")
	}
	post(c, f.url, "/do/proposal/"+pr.ID, f.url, url.Values{"csrf": {csrf}, "contentHash": {pr.ContentHash}, "decision": {"approve"}})
	if st := f.proposal(pr.ID); st.State != host.Failed || st.Code != events.CodeDrift {
		t.Errorf("proposal after approving drifted content: %s %s", st.State, st.Code)
	}
	if now, _ := os.ReadFile(file); !strings.Contains(string(now), "// edited") || strings.Contains(string(now), "return 3") {
		t.Errorf("file: %q", now)
	}
}

// Ten concurrent decisions on one approval (five approve, five deny, each
// with its own reason): the log keeps exactly one, exactly one decider is
// told it decided, and the rest get NotPending.
func TestConcurrentApprovalDecisionsOneWins(t *testing.T) {
	f := newFixture(t)
	c, csrf := f.login()
	p := f.askApproval(`{"x":1}`)
	var wg sync.WaitGroup
	codes := make([]int, 10)
	for i := range codes {
		decision := "approve"
		if i%2 == 1 {
			decision = "deny"
		}
		wg.Go(func() {
			resp := post(c, f.url, "/do/approval/"+p.ID, f.url, url.Values{"csrf": {csrf}, "argsHash": {p.ArgsHash},
				"decision": {decision}, "reason": {fmt.Sprint("reason ", i)}})
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	won, lost := 0, 0
	for _, code := range codes {
		switch code {
		case http.StatusSeeOther:
			won++
		case http.StatusConflict:
			lost++
		}
	}
	if n := f.decisions(p); n != 1 || won != 1 || lost != 9 {
		t.Fatalf("%d approval.decided recorded, %d told they decided, %d NotPending; want 1, 1, 9 (statuses %v)", n, won, lost, codes)
	}
}

// 4,000 cookie-less requests with 4 KB paths: the first refusals are each
// recorded (truncated), the rest are counted into one event; the log grows
// by a bounded number of small events.
func TestRejectionFloodIsAggregated(t *testing.T) {
	f := newFixture(t)
	before := len(f.rejections())
	anon := &http.Client{}
	start := time.Now()
	for i := range 4000 {
		resp, err := anon.Get(fmt.Sprintf("%s/%04d%s", f.url, i, strings.Repeat("x", 4096)))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	f.srv.rejects.Flush()
	rs := f.rejections()[before:]
	// One window: PerCode recorded one by one and one aggregate. On a
	// loaded machine the requests may span a second window (a minute):
	// then twice that at most. Every refusal is accounted for either way.
	windows := int(time.Since(start)/loopback.Window) + 1
	if len(rs) > windows*(loopback.PerCode+1) || len(rs) < loopback.PerCode+1 {
		t.Fatalf("%d ui.request.rejected events for 4000 refusals in %d window(s); want %d per window", len(rs), windows, loopback.PerCode+1)
	}
	if rs[0].Code != events.CodeUnauthenticated || !strings.HasPrefix(rs[0].Attrs.Get("path"), "/0000xxx") || len(rs[0].Attrs.Get("path")) > 256+32 {
		t.Errorf("the first refusal: %s %.100q (%d bytes)", rs[0].Code, rs[0].Attrs.Get("path"), len(rs[0].Attrs.Get("path")))
	}
	accounted := 0
	for _, r := range rs {
		if c := r.Attrs.Get("count"); c != "" {
			var n int
			fmt.Sscan(c, &n)
			accounted += n
		} else {
			accounted++
		}
	}
	if accounted != 4000 {
		t.Errorf("the events account for %d refusals, want 4000", accounted)
	}
}

// forged is token with its last hex digit changed.
func forged(token string) string {
	last := "0"
	if token[len(token)-1] == '0' {
		last = "1"
	}
	return token[:len(token)-1] + last
}

// U1: a launch token signs in once, and never after it expired; each
// refusal is recorded Unauthenticated. Another user who reads a used URL
// (a browser's argv) gets nothing.
func TestLaunchTokenSingleUseAndExpiring(t *testing.T) {
	f := newFixture(t)
	anon := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(token string) int {
		t.Helper()
		resp, err := anon.Get(f.url + "/?token=" + token)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	url := f.srv.URL()
	token := url[strings.Index(url, "token=")+len("token="):]
	if code := get(token); code != http.StatusSeeOther {
		t.Fatalf("first exchange: %d, want 303", code)
	}
	before := len(f.rejections())
	if code := get(token); code != http.StatusUnauthorized {
		t.Fatalf("the same launch token again: %d, want 401", code)
	}
	if code := lastCode(t, f, before); code != events.CodeUnauthenticated {
		t.Fatalf("reuse recorded %s", code)
	}
	if rs := f.rejections(); !strings.Contains(rs[len(rs)-1].Attrs.Get("error")+rs[len(rs)-1].Attrs.Get("reason"), "already used") {
		t.Errorf("the refusal does not say the link was used: %v", rs[len(rs)-1].Attrs)
	}
	old := MintLaunchToken(f.srv.launchKey, time.Now().Add(-LaunchTTL-time.Second))
	before = len(f.rejections())
	if code := get(old); code != http.StatusUnauthorized {
		t.Fatalf("an expired launch token: %d, want 401", code)
	}
	if code := lastCode(t, f, before); code != events.CodeUnauthenticated {
		t.Fatalf("expiry recorded %s", code)
	}
	if f.srv.URL() == url {
		t.Fatal("URL() gave the same launch link twice")
	}
}
