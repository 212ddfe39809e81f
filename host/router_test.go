package host

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// The router picks the host of the client's roots, the deepest holding
// each; several hosts for one client's roots, or none, are refused with a
// code and what to do; the working directory chooses only for a client
// without roots; $TRACEBRIDGE_HOST wins.
func TestRouterChoosesByTheClientsRoots(t *testing.T) {
	hosts := []Entry{{Root: "/w/a", Socket: "a.sock"}, {Root: "/w/a/inner", Socket: "inner.sock"}, {Root: "/w/b", Socket: "b.sock"}}
	var roots []string
	r := NewRouter(RouterOptions{Fixed: hosts, Default: "default.sock", Cwd: "/w/b/src",
		Roots: func(context.Context) []string { return roots }})
	for _, c := range []struct {
		roots []string
		want  string
		code  events.Code
	}{
		{nil, "b.sock", ""}, // the working directory
		{[]string{"file:///w/a"}, "a.sock", ""},
		{[]string{"file:///w/a/inner/pkg"}, "inner.sock", ""}, // the deepest
		{[]string{"file:///w/a/x", "file:///w/a/y"}, "a.sock", ""},
		{[]string{"file:///w/a", "file:///w/b"}, "", events.CodeAmbiguous},
		{[]string{"file:///elsewhere"}, "", events.CodePipeUnavailable},
		{[]string{"https://not-a-file/"}, "b.sock", ""}, // no file roots: as none
	} {
		roots = c.roots
		got, err := r.choose(context.Background(), r.hosts())
		var ce *events.Err
		if c.code != "" {
			if !errors.As(err, &ce) || ce.Code != c.code {
				t.Errorf("roots %v: %q %v, want code %s", c.roots, got, err, c.code)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("roots %v: %q %v, want %s", c.roots, got, err, c.want)
		}
	}
	if got, _ := NewRouter(RouterOptions{Fixed: hosts, Env: "env.sock"}).Path(); got != "env.sock" {
		t.Errorf("with $TRACEBRIDGE_HOST: %q", got)
	}
	if got, _ := NewRouter(RouterOptions{Registry: Registry(t.TempDir()), Default: "default.sock"}).Path(); got != "default.sock" {
		t.Errorf("with no host: %q, want the default (the call then says what to start)", got)
	}
	lone := NewRouter(RouterOptions{Fixed: hosts[:1], Cwd: "/elsewhere"})
	if got, err := lone.Path(); got != "a.sock" || err != nil {
		t.Errorf("with one host: %q %v", got, err)
	}
	if _, err := NewRouter(RouterOptions{Fixed: hosts, Cwd: "/elsewhere"}).Path(); err == nil {
		t.Error("several hosts, none holding the working directory: no error")
	}
}

// A registry lists the hosts that run; a second host for the same root is
// refused; a second root gets its own socket; leaving removes the entry.
func TestRegistryListsRunningHosts(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	os.MkdirAll(dir, 0o700)
	reg := Registry(filepath.Join(dir, "hosts"))
	first := filepath.Join(dir, "host.sock")
	now := time.Now()
	la, pa, leaveA, err := reg.Listen("/w/a", "aaaa", first, filepath.Join(dir, "host-aaaa.sock"), now)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	if pa != first {
		t.Fatalf("the first host listens on %s, want %s", pa, first)
	}
	if _, _, _, err := reg.Listen("/w/a", "aaaa", first, filepath.Join(dir, "host-aaaa.sock"), now); err == nil {
		t.Fatal("a second host for the same root was not refused")
	}
	lb, pb, leaveB, err := reg.Listen("/w/b", "bbbb", first, filepath.Join(dir, "host-bbbb.sock"), now)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	if pb != filepath.Join(dir, "host-bbbb.sock") {
		t.Fatalf("the second root's host listens on %s", pb)
	}
	if live := reg.Live(); len(live) != 2 || live[0].Root != "/w/a" || live[1].Socket != pb || live[0].PID != os.Getpid() {
		t.Fatalf("live: %+v", live)
	}
	leaveA()
	leaveB()
	if live := reg.Live(); len(live) != 0 {
		t.Fatalf("after leaving: %+v", live)
	}
}
