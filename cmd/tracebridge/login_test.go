package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// F-O3: during `servers login` another local user reads the authorization
// URL (state included) from the browser's argv and delivers their own code
// to the loopback callback first. The callback lets in only this user's
// processes, answers only the state it waits for, and only once: the
// operator's own redirect is the one login gets. Needs root for setpriv,
// as CI runs.
func TestLoginCallbackTakesOnlyTheOperatorsRedirect(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to run a client under another uid (CI runs as root)")
	}
	var stderr strings.Builder
	var mu sync.Mutex
	cb, err := listenCallback(0, "hosted", &syncWriter{w: &stderr, mu: &mu})
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close()
	m := &Main{Stderr: io.Discard}
	authURL := "http://127.0.0.1:1/authorize?client_id=c&state=S1&code_challenge=x"
	got := make(chan string, 1)
	go func() {
		r, err := awaitRedirect(context.Background(), m, cb, authURL, "hosted", true)
		if err != nil {
			got <- "error: " + err.Error()
			return
		}
		got <- r.Code
	}()
	eventually(t, 5*time.Second, "the callback waits", func() bool { cb.mu.Lock(); defer cb.mu.Unlock(); return cb.waiting != "" })

	// Another user, with the state read from argv.
	thief := exec.Command("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-s", "-m", "5", "-o", "/dev/null", "-w", "%{http_code}",
		cb.url+"?code=attacker&state=S1")
	if out, _ := thief.Output(); string(out) == "200" {
		t.Fatalf("uid 65534 delivered its code: HTTP %s", out)
	}
	// This user, with another state: not taken, nothing consumed.
	if code := get(t, cb.url+"?code=other&state=S0"); code != http.StatusGone {
		t.Fatalf("a redirect with a state nobody waits for: HTTP %d", code)
	}
	// The operator's browser.
	if code := get(t, cb.url+"?code=operator&state=S1"); code != http.StatusOK {
		t.Fatalf("the operator's redirect: HTTP %d", code)
	}
	select {
	case c := <-got:
		if c != "operator" {
			t.Fatalf("login got code %q, not the operator's", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("login got no code")
	}
	// Answered once: a second redirect with the same state changes nothing.
	if code := get(t, cb.url+"?code=late&state=S1"); code != http.StatusGone {
		t.Fatalf("a second redirect: HTTP %d", code)
	}
	mu.Lock()
	logged := stderr.String()
	mu.Unlock()
	if !strings.Contains(logged, "refused a connection to the login callback") || !strings.Contains(logged, "uid 65534") {
		t.Fatalf("the refusal is not reported: %q", logged)
	}
}

func get(t *testing.T, u string) int {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
