package config

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Watch reports a changed, a removed and a re-created file once each, and
// nothing while the file stays as it is.
func TestWatchReportsEachChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tracebridge.toml")
	os.WriteFile(path, []byte("[policy]\n"), 0o600)
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		var changes atomic.Int32
		done := make(chan struct{})
		go func() { Watch(ctx, path, time.Second, func() { changes.Add(1) }); close(done) }()
		step := func(change func(), want int) {
			t.Helper()
			change()
			time.Sleep(3 * time.Second)
			synctest.Wait()
			if int(changes.Load()) != want {
				t.Fatalf("%d changes seen, want %d", changes.Load(), want)
			}
		}
		step(func() {}, 0)
		step(func() { os.WriteFile(path, []byte("[policy]\ndeny = [\"x\"]\n"), 0o600) }, 1)
		step(func() {}, 1)
		step(func() { os.Remove(path) }, 2)
		step(func() { os.WriteFile(path, []byte("[policy]\n"), 0o600) }, 3)
		cancel()
		<-done
	})
}

// The event of a broken configuration carries ConfigInvalid and the
// error; a good one is OK; both carry the text and its hash.
func TestLoadedEvent(t *testing.T) {
	ok := LoadedEvent("/c.toml", []byte("[policy]\n"), nil)
	bad := LoadedEvent("/c.toml", []byte("[policy\n"), os.ErrInvalid)
	if ok.Outcome != events.OK || ok.Code != "" || ok.Attrs.Get("config") != "[policy]\n" || len(ok.Attrs.Get("sha256")) != 64 {
		t.Fatalf("ok: %+v", ok)
	}
	if bad.Code != events.CodeConfigInvalid || !strings.Contains(bad.Attrs.Get("error"), "invalid") || bad.Attrs.Get("sha256") == ok.Attrs.Get("sha256") {
		t.Fatalf("bad: %+v", bad)
	}
}
