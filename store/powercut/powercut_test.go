//go:build linux

package powercut

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mount(t *testing.T) (*FS, string) {
	t.Helper()
	backing, mnt := filepath.Join(t.TempDir(), "backing"), filepath.Join(t.TempDir(), "mnt")
	for _, d := range []string{backing, mnt} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(backing, "old"), []byte("before the mount"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(backing, mnt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Error(err)
		}
	})
	return f, mnt
}

func cut(t *testing.T, f *FS, keep float64) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "image")
	if err := f.Cut(dst, Tear{Keep: keep}, rand.New(rand.NewPCG(1, 2))); err != nil {
		t.Fatal(err)
	}
	return dst
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
}

func read(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "<" + err.Error() + ">"
	}
	return string(b)
}

// TestOnlySyncedSurvives walks the rules a cut follows: a file's content
// needs its fsync, its name the directory's; a rename without a directory
// fsync leaves the old name; a process crash (Keep 1) keeps everything.
func TestOnlySyncedSurvives(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "a")
	if err := os.WriteFile(p, []byte("unsynced"), 0o600); err != nil {
		t.Fatal(err)
	}
	img := cut(t, f, 0)
	if got := read(filepath.Join(img, "old")); got != "before the mount" {
		t.Errorf("a file from before the mount: %q", got)
	}
	if _, err := os.Stat(filepath.Join(img, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file never synced survived the cut: %v", err)
	}
	if got := read(filepath.Join(cut(t, f, 1), "a")); got != "unsynced" {
		t.Errorf("Keep 1 (a process crash) lost the page cache: %q", got)
	}

	syncDir(t, mnt) // the name is durable, the content is not
	if got := read(filepath.Join(cut(t, f, 0), "a")); got != "" {
		t.Errorf("the directory was synced, the file not: want an empty file, got %q", got)
	}
	fh, err := os.OpenFile(p, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	if _, err := fh.WriteAt([]byte("UN"), 0); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(cut(t, f, 0), "a")); got != "unsynced" {
		t.Errorf("after the file's fsync: %q", got)
	}
	fh.Close()

	// A rename is durable with the directory's fsync only.
	tmp := filepath.Join(mnt, ".tmp")
	if err := os.WriteFile(tmp, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(mnt, "old")); err != nil {
		t.Fatal(err)
	}
	if got := read(filepath.Join(cut(t, f, 0), "old")); got != "before the mount" {
		t.Errorf("a rename not made durable replaced the file: %q", got)
	}
	syncDir(t, mnt)
	if got := read(filepath.Join(cut(t, f, 0), "old")); got != "" {
		t.Errorf("renamed over without the temp file's fsync: want empty, got %q", got)
	}
	if st := f.Stats(); st.DirSyncs != 2 || st.FileSyncs != 1 || st.Renames != 1 {
		t.Errorf("stats %+v", st)
	}
}

// TestTornPages: unsynced pages of one file survive independently.
func TestTornPages(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "big")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	old := bytes.Repeat([]byte{'o'}, 64*pageSize)
	if _, err := fh.Write(old); err != nil {
		t.Fatal(err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatal(err)
	}
	syncDir(t, mnt)
	if _, err := fh.WriteAt(bytes.Repeat([]byte{'n'}, 64*pageSize), 0); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(cut(t, f, 0.5), "big"))
	if err != nil {
		t.Fatal(err)
	}
	var n, o int
	for i := 0; i < len(b); i += pageSize {
		page := b[i : i+pageSize]
		switch {
		case bytes.Equal(page, old[:pageSize]):
			o++
		case bytes.Equal(page, bytes.Repeat([]byte{'n'}, pageSize)):
			n++
		default:
			t.Fatalf("page %d is torn inside: %q…", i/pageSize, page[:16])
		}
	}
	if n == 0 || o == 0 {
		t.Errorf("Keep 0.5 over 64 pages kept %d new and %d old pages", n, o)
	}
}

// TestInjectedFaults: an fsync that fails with EIO loses its pages for good
// (a later fsync succeeds without them); a write fails with ENOSPC.
func TestInjectedFaults(t *testing.T) {
	f, mnt := mount(t)
	p := filepath.Join(mnt, "log")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	syncDir(t, mnt)
	fh.Write([]byte("lost"))
	f.Inject(Fault{Op: OpFsync, Path: "log", Errno: syscall.EIO, Count: 1})
	if err := fh.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("fsync with an EIO fault: %v", err)
	}
	if err := fh.Sync(); err != nil {
		t.Fatalf("the fault was for one call: %v", err)
	}
	if got := read(filepath.Join(cut(t, f, 0), "log")); got != "\x00\x00\x00\x00" {
		t.Errorf("after a failed fsync and a good one, the disk holds %q: the first write's page was dropped, the size made it", got)
	}
	f.Inject(Fault{Op: OpWrite, Errno: syscall.ENOSPC})
	if _, err := fh.Write([]byte("x")); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("write with an ENOSPC fault: %v", err)
	}
	f.ClearFaults()
	if _, err := fh.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
}
