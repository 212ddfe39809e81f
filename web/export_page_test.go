package web

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// F-U2: a session the UI cannot export answers a page that says why and
// what does it (HTTP 422), never a bare 500.
func TestSessionExportFailureExplains(t *testing.T) {
	f := newFixture(t)
	f.srv.opts.ExportSession = func(context.Context, events.ID, io.Writer) error {
		return errors.New("session X: the recorded configuration was cut in the log; export with --config FILE")
	}
	c, _ := f.login()
	resp, err := c.Get(f.url + "/sessions/" + events.NewID().String() + "/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(string(b), "tracebridge session export") || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("HTTP %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
}
