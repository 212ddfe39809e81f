package web

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/pipe"

	"github.com/tracebridge/tracebridge/events"
)

func get(t *testing.T, c *http.Client, url string) (int, string, http.Header) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

// TestRunPagesAndTriad: a failed run is listed under its filters, its page
// names the verdict, and its triad downloads as a zip of three files.
func TestRunPagesAndTriad(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	ok, bad := f.em.NewID(), f.em.NewID()
	f.em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: ok, Attrs: events.A("method", "tools/call", "tool", "alpha")})
	f.em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: ok, Outcome: events.OK})
	f.em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: bad, Attrs: events.A("method", "tools/call", "tool", "beta")})
	f.em.Emit(events.Event{Kind: events.KindPolicyDecided, RequestID: bad, Outcome: events.Denied, Code: events.CodePolicyDenied,
		Attrs: events.A("reason", "<b>not granted</b>")})
	f.em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: bad, Outcome: events.Denied, Code: events.CodePolicyDenied})
	if err := f.em.FlushAll(f.ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query     string
		has, lack []string
	}{
		{"", []string{ok.String(), bad.String()}, nil},
		{"?status=denied", []string{bad.String()}, []string{ok.String()}},
		{"?tool=alpha", []string{ok.String()}, []string{bad.String()}},
		{"?q=policydenied", []string{bad.String()}, []string{ok.String()}},
		{"?q=" + strings.ToLower(ok.String()[20:]), []string{ok.String()}, []string{bad.String()}},
	} {
		for _, path := range []string{"/runs", "/runs/rows"} {
			code, body, _ := get(t, c, f.url+path+tc.query)
			if code != http.StatusOK {
				t.Fatalf("%s%s: %d", path, tc.query, code)
			}
			for _, s := range tc.has {
				if !strings.Contains(body, `data-request="`+s+`"`) {
					t.Errorf("%s%s lacks %s", path, tc.query, s)
				}
			}
			for _, s := range tc.lack {
				if strings.Contains(body, `data-request="`+s+`"`) {
					t.Errorf("%s%s lists %s", path, tc.query, s)
				}
			}
		}
	}
	if code, body, _ := get(t, c, f.url+"/runs?status=bogus"); code != http.StatusOK || !strings.Contains(body, "want ok, failed, denied or incomplete") {
		t.Errorf("a bad status filter: %d", code)
	}
	code, body, _ := get(t, c, f.url+"/runs/"+bad.String())
	if code != http.StatusOK || !strings.Contains(body, `data-code="PolicyDenied"`) || !strings.Contains(body, `data-boundary="policy"`) ||
		!strings.Contains(body, "What to do: "+html.EscapeString(events.ActionFor(events.CodePolicyDenied))) || strings.Contains(body, "<b>not granted</b>") {
		t.Errorf("run page: %d\n%s", code, body)
	}
	if code, _, _ := get(t, c, f.url+"/runs/"+f.em.NewID().String()); code != http.StatusNotFound {
		t.Errorf("unknown run: %d", code)
	}
	code, body, h := get(t, c, f.url+"/runs/"+bad.String()+"/triad.zip")
	if code != http.StatusOK || h.Get("Content-Type") != "application/zip" {
		t.Fatalf("triad: %d %s", code, h.Get("Content-Type"))
	}
	zr, err := zip.NewReader(bytes.NewReader([]byte(body)), int64(len(body)))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, zf := range zr.File {
		names = append(names, zf.Name)
	}
	slug := "beta-denied-" + strings.ToLower(bad.String())
	want := []string{"artifacts/logs/" + slug + ".log", "artifacts/logs/" + slug + ".metadata.json", "docs/diagrams/" + slug + ".mmd"}
	if strings.Join(names, " ") != strings.Join(want, " ") {
		t.Errorf("triad files: %v, want %v", names, want)
	}
}

// /assets/ serves files, never a listing of a directory.
func TestAssetsListNoDirectory(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	for _, path := range []string{"/assets/", "/assets/vendor/", "/assets/vendor", "/assets/vendor/mermaid/"} {
		if code, body, _ := get(t, c, f.url+path); code != http.StatusNotFound || strings.Contains(body, "<a href") {
			t.Errorf("%s: %d %.80q", path, code, body)
		}
	}
	if code, _, _ := get(t, c, f.url+"/assets/app.js"); code != http.StatusOK {
		t.Errorf("/assets/app.js: %d", code)
	}
}

// Every page names its icon, and /favicon.ico (which browsers ask for
// unbidden) leads to it: no 404 on any page.
func TestFavicon(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	_, body, _ := get(t, c, f.url+"/runs")
	if !strings.Contains(body, `<link rel="icon" href="/assets/favicon.svg"`) {
		t.Error("the page names no icon")
	}
	code, icon, h := get(t, c, f.url+"/favicon.ico")
	if code != http.StatusOK || !strings.HasPrefix(h.Get("Content-Type"), "image/svg+xml") || !strings.HasPrefix(icon, "<svg") {
		t.Errorf("/favicon.ico: %d %s %.40q", code, h.Get("Content-Type"), icon)
	}
}

// A call answered fine whose proposal later met Drift reads as ok, with the
// proposal's fate and the operator wait apart.
func TestRunPageKeepsTheCallApartFromItsProposal(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	req := f.em.NewID()
	for _, e := range []events.Event{
		{Kind: events.KindMCPRequestReceived, Outcome: events.OK, Attrs: events.A("method", "tools/call", "tool", "propose_text_edit")},
		{Kind: events.KindApprovalDecided, Outcome: events.OK, DurationMs: 1500},
		{Kind: events.KindMCPResponseSent, Outcome: events.OK},
		{Kind: events.KindProposalFailed, Outcome: events.Error, Code: events.CodeDrift, Attrs: events.A("error", "a.go changed")},
	} {
		e.RequestID = req
		f.em.Emit(e)
	}
	if err := f.em.Flush(f.ctx, req); err != nil {
		t.Fatal(err)
	}
	code, body, _ := get(t, c, f.url+"/runs/"+req.String())
	if code != 200 || !strings.Contains(body, `data-status="ok"`) || !strings.Contains(body, `id="later"`) || !strings.Contains(body, "Drift") || !strings.Contains(body, "waited 1500 ms") {
		t.Fatalf("run page: %d\n%s", code, body)
	}
}

// The run page draws a waterfall with the operator's wait as its own bar,
// and its time per boundary counts each instant once: an upstream call of
// 200 ms after a 5 s approval is 200 ms of upstream, not 5.2 s, and the
// boundaries add up to the request's 5.25 s.
func TestRunPageWaterfall(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	req := f.em.NewID()
	t0 := time.Now().UTC()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	for _, e := range []events.Event{
		{Kind: events.KindMCPRequestReceived, Time: at(0), Attrs: events.A("method", "tools/call", "tool", "gh__create_issue")},
		{Kind: events.KindApprovalDecided, Time: at(5010), DurationMs: 5000},
		{Kind: events.KindUpstreamResponse, Time: at(5220), DurationMs: 200},
		{Kind: events.KindToolCompleted, Time: at(5230), DurationMs: 215},
		{Kind: events.KindExecutorAudit, Time: at(5240), DurationMs: 5235},
		{Kind: events.KindMCPResponseSent, Time: at(5250), DurationMs: 5250},
	} {
		e.RequestID, e.Outcome = req, events.OK
		f.em.Emit(e)
	}
	if err := f.em.Flush(f.ctx, req); err != nil {
		t.Fatal(err)
	}
	code, body, _ := get(t, c, f.url+"/runs/"+req.String())
	if code != 200 || !strings.Contains(body, `id="waterfall"`) {
		t.Fatalf("run page: %d\n%s", code, body)
	}
	wait := regexp.MustCompile(`data-kind="approval.decided" data-start-ms="10" data-ms="5000"><td>approval.decided \(operator's wait\)`)
	if !wait.MatchString(body) {
		t.Errorf("no bar for the operator's wait from 10 ms for 5000 ms:\n%s", body)
	}
	for boundary, ms := range map[string]string{"approval": "5000", "upstream": "200", "tool": "15", "executor": "20", "mcp": "15"} {
		row := regexp.MustCompile(`<tr data-boundary="` + boundary + `"><td>` + boundary + `</td><td class="num">` + ms + `(\.0+)? ms</td>`)
		if !row.MatchString(body) {
			t.Errorf("time per boundary: %s should be %s ms:\n%s", boundary, ms, body[strings.Index(body, `id="bounds"`):])
		}
	}
}

// The review page commits the applied changes — only the files approved
// proposals changed — with the review as the message, in a real git repo.
func TestReviewCommitsTheAppliedChanges(t *testing.T) {
	f := newFixture(t)
	for k, v := range map[string]string{"GIT_AUTHOR_NAME": "op", "GIT_AUTHOR_EMAIL": "op@example.com", "GIT_COMMITTER_NAME": "op", "GIT_COMMITTER_EMAIL": "op@example.com"} {
		t.Setenv(k, v)
	}
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", f.ws}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "start")
	os.WriteFile(filepath.Join(f.ws, "unrelated.txt"), []byte("not mine\n"), 0o644)
	c, csrf := f.login()
	pr := f.propose("return 1", "return 2")
	post(c, f.url, "/do/proposal/"+pr.ID, f.url, url.Values{"csrf": {csrf}, "contentHash": {pr.ContentHash}, "decision": {"approve"}})
	args, _ := json.Marshal(host.PresentArgs{Content: "# Return two\n\nA returns 2 now: [src/a.go:3][].", Mode: "replace"})
	if resp, err := f.client.Call(f.ctx, pipe.Request{Command: "present_review", RequestID: f.em.NewID().String(), OperationID: f.em.NewID().String(), Payload: args}); err != nil || !resp.OK {
		t.Fatalf("present: %v %+v", err, resp)
	}
	resp := post(c, f.url, "/do/review/commit", f.url, url.Values{"csrf": {csrf}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "committed") {
		t.Fatalf("commit: %d %s", resp.StatusCode, loc)
	}
	if subject := git("log", "-1", "--format=%s"); subject != "Return two" {
		t.Fatalf("commit subject %q", subject)
	}
	if files := git("show", "--name-only", "--format="); files != "src/a.go" {
		t.Fatalf("committed files %q, want only src/a.go", files)
	}
	if status := git("status", "--porcelain"); !strings.Contains(status, "unrelated.txt") {
		t.Fatalf("the unrelated file was committed: %q", status)
	}
}
