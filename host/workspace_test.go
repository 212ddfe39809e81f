package host

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// tree is a workspace root beside an outside directory holding a sentinel.
type tree struct {
	ws       *Workspace
	root     string
	outside  string
	sentinel string
}

func newTree(t testing.TB) *tree {
	t.Helper()
	base := t.TempDir()
	tr := &tree{root: filepath.Join(base, "ws"), outside: filepath.Join(base, "outside")}
	for _, d := range []string{tr.root, filepath.Join(tr.root, "sub"), tr.outside, filepath.Join(base, "ws-evil")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	tr.sentinel = filepath.Join(tr.outside, "sentinel.txt")
	os.WriteFile(tr.sentinel, []byte("untouched"), 0o644)
	os.WriteFile(filepath.Join(base, "ws-evil", "x.txt"), []byte("untouched"), 0o644)
	os.WriteFile(filepath.Join(tr.root, "sub", "ok.txt"), []byte("old"), 0o640)
	var err error
	if tr.ws, err = OpenWorkspace(tr.root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		tr.ws.Close()
		if b, _ := os.ReadFile(tr.sentinel); string(b) != "untouched" {
			t.Errorf("the sentinel outside the root changed: %q", b)
		}
		if b, _ := os.ReadFile(filepath.Join(base, "ws-evil", "x.txt")); string(b) != "untouched" {
			t.Errorf("the sibling-prefix directory changed: %q", b)
		}
	})
	return tr
}

func TestWriteReplacesAtomicallyAndKeepsTheMode(t *testing.T) {
	tr := newTree(t)
	if err := tr.ws.WriteFile("sub/ok.txt", []byte("new")); err != nil {
		t.Fatal(err)
	}
	b, err := tr.ws.ReadFile("./sub/../sub/ok.txt")
	if err != nil || string(b) != "new" {
		t.Fatalf("read back %q %v", b, err)
	}
	fi, _ := os.Stat(filepath.Join(tr.root, "sub", "ok.txt"))
	if fi.Mode().Perm() != 0o640 {
		t.Fatalf("mode %v, want 0640 kept", fi.Mode().Perm())
	}
	if err := tr.ws.WriteFile("sub/created.txt", []byte("c")); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob(filepath.Join(tr.root, "sub", ".tb-*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}

func TestEveryEscapeIsRefused(t *testing.T) {
	cases := []struct {
		name  string
		setup func(tr *tree) string // returns the path to try
	}{
		{"dot-dot", func(*tree) string { return "../outside/sentinel.txt" }},
		{"dot-dot inside", func(*tree) string { return "sub/../../outside/sentinel.txt" }},
		{"absolute", func(tr *tree) string { return tr.sentinel }},
		{"sibling prefix", func(*tree) string { return "../ws-evil/x.txt" }},
		{"empty", func(*tree) string { return "" }},
		{"NUL", func(*tree) string { return "sub/a\x00b" }},
		{"symlinked file", func(tr *tree) string {
			os.Symlink(tr.sentinel, filepath.Join(tr.root, "link.txt"))
			return "link.txt"
		}},
		{"symlinked directory", func(tr *tree) string {
			os.Symlink(tr.outside, filepath.Join(tr.root, "out"))
			return "out/sentinel.txt"
		}},
		{"dangling symlink", func(tr *tree) string {
			os.Symlink(filepath.Join(tr.outside, "new.txt"), filepath.Join(tr.root, "dangling.txt"))
			return "dangling.txt"
		}},
		{"hardlink to outside", func(tr *tree) string {
			if err := os.Link(tr.sentinel, filepath.Join(tr.root, "hard.txt")); err != nil {
				t.Skip("no hard links here: ", err)
			}
			return "hard.txt"
		}},
		{"FIFO", func(tr *tree) string {
			if runtime.GOOS == "windows" {
				t.Skip("no FIFOs")
			}
			mkfifo(t, filepath.Join(tr.root, "fifo"))
			return "fifo"
		}},
		{"directory", func(*tree) string { return "sub" }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tr := newTree(t)
			p := tc.setup(tr)
			var pe *events.Err
			if err := tr.ws.WriteFile(p, []byte("pwned")); !errors.As(err, &pe) {
				t.Fatalf("WriteFile(%q) = %v, want a PathError", p, err)
			}
			if _, err := tr.ws.ReadFile(p); !errors.As(err, &pe) {
				t.Fatalf("ReadFile(%q) = %v, want a PathError", p, err)
			}
			if _, err := os.Stat(filepath.Join(tr.outside, "new.txt")); !errors.Is(err, fs.ErrNotExist) {
				t.Fatal("a file was created outside the root")
			}
		})
	}
}

// A directory is swapped for a symlink to the outside, back and forth,
// while writes go to a file inside it: no write ever lands outside.
func TestDirectorySwapDuringWritesNeverEscapes(t *testing.T) {
	tr := newTree(t)
	os.WriteFile(filepath.Join(tr.outside, "ok.txt"), []byte("untouched"), 0o644)
	sub, real := filepath.Join(tr.root, "sub"), filepath.Join(tr.root, "sub.real")
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			os.Rename(sub, real)
			os.Symlink(tr.outside, sub)
			time.Sleep(50 * time.Microsecond)
			os.Remove(sub)
			os.Rename(real, sub)
		}
	})
	deadline := time.Now().Add(500 * time.Millisecond)
	writes, refused := 0, 0
	for time.Now().Before(deadline) {
		if err := tr.ws.WriteFile("sub/ok.txt", []byte("inside")); err != nil {
			refused++
		}
		writes++
	}
	close(stop)
	wg.Wait()
	if b, _ := os.ReadFile(filepath.Join(tr.outside, "ok.txt")); string(b) != "untouched" {
		t.Fatalf("a write landed outside the root: %q", b)
	}
	if stray, _ := filepath.Glob(filepath.Join(tr.outside, ".tb-*")); len(stray) > 0 {
		t.Fatalf("temporary files created outside: %v", stray)
	}
	t.Logf("%d writes, %d refused while the directory was a symlink", writes, refused)
}

func FuzzClean(f *testing.F) {
	for _, s := range []string{"a/b", "../x", "/etc/passwd", "a/../../b", "./a//b/", "a\\..\\..\\b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		c, err := Clean(p)
		if err != nil {
			return
		}
		if !filepath.IsLocal(filepath.FromSlash(c)) || filepath.IsAbs(c) || c == ".." || len(c) > 0 && c[0] == '/' {
			t.Fatalf("Clean(%q) = %q escapes", p, c)
		}
	})
}
