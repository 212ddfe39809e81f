package web

import (
	"context"
	"io"
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
