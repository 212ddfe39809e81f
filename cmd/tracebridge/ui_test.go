package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestDemoKeepServesTheUI: `demo --keep` prints the UI's URL and serves the
// demo's runs, a pending proposal and the review until interrupted.
func TestDemoKeepServesTheUI(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	p := start(t, tbBin, data, "demo", "--keep", "--artifacts", t.TempDir())
	var url string
	eventually(t, 90*time.Second, "the UI URL on stdout", func() bool {
		for _, l := range p.output() {
			if i := strings.Index(l, "operator UI: open "); i >= 0 {
				url = strings.TrimSpace(l[i+len("operator UI: open "):])
				return true
			}
		}
		return false
	})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second, Transport: localhostTransport}
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
		}
		return string(b)
	}
	runs := get(url) // exchanges the token, lands on /runs
	root := strings.SplitN(url, "/?", 2)[0]
	if !strings.Contains(runs, "PipeUnavailable") || !strings.Contains(runs, "propose_text_edit") {
		t.Errorf("the runs page lacks the demo's runs")
	}
	if a := get(root + "/approvals"); !strings.Contains(a, `<span class="add">&#43;func Price() int { return 150 }</span>`) || !strings.Contains(a, `value="approve"`) {
		t.Errorf("no pending proposal on /approvals:\n%s\nstderr:\n%s", a, p.stderrText())
	}
	if r := get(root + "/reviews"); !strings.Contains(r, `href="/workspace?file=svc%2Fprice.go#L4"`) {
		t.Errorf("no review with its reference on /reviews")
	}
	// The printed URL was a one-time credential: used, it signs no one
	// else in (U1). `tracebridge ui` mints a fresh one for the same UI.
	other := &http.Client{Timeout: 10 * time.Second, Transport: localhostTransport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if resp, err := other.Get(url); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("the used launch URL again: %v %v, want 401", resp, err)
	} else {
		resp.Body.Close()
	}
	out, err := exec.Command(tbBin, "--data", data, "ui").Output()
	fresh := strings.TrimSpace(string(out))
	if err != nil || fresh == url || !strings.HasPrefix(fresh, root+"/?token=") {
		t.Errorf("tracebridge ui: %q %v, want a fresh link to %s", out, err, root)
	}
	// Another local user who reads the fresh URL (a browser's argv) gets
	// nothing: the UI lets only this user's processes connect; the link
	// is not even spent.
	if os.Getuid() == 0 {
		hostPort := strings.TrimPrefix(root, "http://")
		port := hostPort[strings.LastIndex(hostPort, ":")+1:]
		host := strings.TrimSuffix(hostPort, ":"+port)
		code, _ := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-s", "-m", "5", "-o", "/dev/null",
			"-w", "%{http_code}", "--resolve", host+":"+port+":127.0.0.1", fresh).Output()
		if string(code) != "000" {
			t.Errorf("uid 65534 opening a fresh launch URL: HTTP %s, want no answer", code)
		}
	}
	if resp, err := other.Get(fresh); err != nil || resp.StatusCode != http.StatusSeeOther {
		t.Errorf("the fresh launch URL: %v %v, want 303", resp, err)
	} else {
		resp.Body.Close()
	}
	p.cmd.Process.Signal(syscall.SIGINT)
	if code := p.wait(t, 20*time.Second); code != 0 {
		t.Errorf("demo --keep exited %d after Ctrl-C:\n%s", code, p.stderrText())
	}
	if _, err := os.Stat(filepath.Join(data, "run", "ui.json")); !os.IsNotExist(err) {
		t.Errorf("run/ui.json outlived the UI: %v", err)
	}
	out, err = exec.Command(tbBin, "--data", data, "ui").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "no UI runs") {
		t.Errorf("tracebridge ui with none running: %v %s", err, out)
	}
}
