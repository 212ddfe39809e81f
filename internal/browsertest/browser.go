// Package browsertest starts the real Chromium the browser tests drive
// (the operator UI's, VS Code's under code-server).
package browsertest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// ChromiumPath is Debian's Chromium, which `make test` installs (.ci/deps);
// TB_CHROMIUM names another. The browser tests fail (never skip) without
// it.
func ChromiumPath(t testing.TB) string {
	p := os.Getenv("TB_CHROMIUM")
	if p == "" {
		p = "/usr/bin/chromium"
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("the browser tests need Chromium at %s (apt-get install chromium, as make test does, or set TB_CHROMIUM): %v", p, err)
	}
	return p
}

// New starts a headless Chromium with an empty profile and a window of
// width×height, and returns a tab context; the browser ends with the test.
func New(t testing.TB, width, height int) context.Context {
	t.Helper()
	// Not t.TempDir: Chromium's helper processes may still write to the
	// profile for a moment after the browser is gone, and TempDir's cleanup
	// fails the test on a directory that is not empty.
	profile, err := os.MkdirTemp("", "tb-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(ChromiumPath(t)),
		chromedp.NoSandbox, // CI runs as root
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(width, height),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() {
		cancel()
		cancelAlloc()
		for i := 0; i < 40 && os.RemoveAll(profile) != nil; i++ {
			time.Sleep(50 * time.Millisecond)
		}
	})
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return ctx
}
