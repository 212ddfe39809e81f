package web

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// A session's diagram draws the events of its requests that carry no
// session: the upstream hop and an operator's decision (they were missing,
// so an approved call looked as if its approval was skipped).
func TestSessionDiagramHasTheUpstreamHopAndTheDecision(t *testing.T) {
	f := newFixture(t)
	sess, req := f.em.NewID(), f.em.NewID()
	for _, e := range []events.Event{
		{Kind: events.KindMCPRequestReceived, RequestID: req, SessionID: sess, Outcome: events.OK, Attrs: events.A("method", "tools/call", "tool", "up__write")},
		{Kind: events.KindApprovalRequested, RequestID: req, SessionID: sess, Outcome: events.Pending},
		{Kind: events.KindApprovalDecided, RequestID: req, Outcome: events.OK, DurationMs: 5000, Attrs: events.A("by", "operator:alice")},
		{Kind: events.KindUpstreamRequestSent, RequestID: req, Outcome: events.OK, Attrs: events.A("server", "up")},
		{Kind: events.KindUpstreamResponse, RequestID: req, Outcome: events.OK, Attrs: events.A("server", "up")},
		{Kind: events.KindMCPResponseSent, RequestID: req, SessionID: sess, Outcome: events.OK},
	} {
		f.em.Emit(e)
	}
	if err := f.em.Flush(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	c, _ := f.login()
	resp, err := c.Get(f.url + "/sessions/" + sess.String())
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	_, diagram, _ := strings.Cut(string(body), `<pre class="mermaid-src" hidden>`)
	diagram, _, _ = strings.Cut(diagram, "</pre>")
	for _, want := range []string{"approval.decided", "upstream.request.sent", "upstream.response.received", "Upstream_up"} {
		if !strings.Contains(diagram, want) {
			t.Errorf("the session diagram lacks %s", want)
		}
	}
}

// F7: the Sessions page lists the sessions MCP clients opened; a newer
// burst of synthetic ones (no client: loadgen, the demo's burst) is
// counted, not listed above them, and shown on asking.
func TestSessionsPageListsClientsSessionsFirst(t *testing.T) {
	f := newFixture(t)
	real, quiet := f.em.NewID(), f.em.NewID()
	f.em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: f.em.NewID(), SessionID: real, Outcome: events.OK, Attrs: events.A("method", "initialize", events.AttrClient, "claude-code/2.1")})
	// A 2026-07-28 client names itself on no request: the bridge served
	// its session all the same.
	f.em.Emit(events.Event{Kind: events.KindMCPSessionStarted, SessionID: quiet, Outcome: events.OK})
	f.em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: f.em.NewID(), SessionID: quiet, Outcome: events.OK, Attrs: events.A("method", "tools/list")})
	for range 250 {
		f.em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: f.em.NewID(), SessionID: f.em.NewID(), Outcome: events.OK, Attrs: events.A("method", "tools/call")})
	}
	if err := f.em.FlushAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	c, _ := f.login()
	_, body, _ := get(t, c, f.url+"/sessions")
	if !strings.Contains(body, real.String()) || !strings.Contains(body, quiet.String()) || !strings.Contains(body, "250 sessions no MCP client opened") || strings.Count(body, "<tr data-session=") != 2 {
		t.Fatalf("the sessions page does not list the clients' sessions alone:\n%s", body)
	}
	_, body, _ = get(t, c, f.url+"/sessions?all=1")
	if n := strings.Count(body, "<tr data-session="); n != 200 || !strings.Contains(body, "Only the sessions MCP clients opened") {
		t.Fatalf("?all=1 lists %d sessions, want the newest 200", n)
	}
}

// After sign-in the browser goes only to a path of this UI: whatever next
// says, another site is never where it lands.
func TestSignInReturnsOnlyToThisUI(t *testing.T) {
	for next, want := range map[string]string{"/approvals": "/approvals", "/runs?x=1": "/runs?x=1", "//evil.example": "/", "/\t/evil.example": "/",
		"/\\evil.example": "/", "https://evil.example": "/", "": "/", "javascript:alert(1)": "/", "/\n/evil.example": "/"} {
		if got := localPath(next); got != want {
			t.Errorf("localPath(%q) = %q, want %q", next, got, want)
		}
	}
}

// Only a page the browser opens starts a sign-in: the favicon (and any
// fetch) a signed-out page asks for is refused instead, or it starts a
// sign-in of its own that lands the user on the favicon.
func TestOnlyAPageStartsASignIn(t *testing.T) {
	for _, tc := range []struct {
		path, dest string
		want       bool
	}{
		{"/approvals", "document", true},
		{"/favicon.ico", "image", false},
		{"/events", "empty", false},
		{"/approvals", "", true},
		{"/favicon.ico", "", false},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.dest != "" {
			r.Header.Set("Sec-Fetch-Dest", tc.dest)
		}
		if got := opensPage(r); got != tc.want {
			t.Errorf("%s (Sec-Fetch-Dest %q): opensPage %v, want %v", tc.path, tc.dest, got, tc.want)
		}
	}
}
