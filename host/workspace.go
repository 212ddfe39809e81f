package host

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tracebridge/tracebridge/events"
)

// MaxFileSize caps a file the host reads or writes.
const MaxFileSize = 16 << 20

// pathRefused is a path the workspace refuses (PathRefused), and why.
func pathRefused(path, why string) *events.Err {
	return events.Errorf(events.CodePathRefused, "%q %s", path, why)
}

// Workspace is a directory tree every file operation is confined to.
type Workspace struct {
	root *os.Root
	dir  string
}

// OpenWorkspace opens dir as a workspace root.
func OpenWorkspace(dir string) (*Workspace, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("workspace root: %w", err)
	}
	return &Workspace{root: r, dir: abs}, nil
}

// Dir is the root's absolute path.
func (w *Workspace) Dir() string { return w.dir }

// Close releases the root.
func (w *Workspace) Close() error { return w.root.Close() }

// Clean checks a workspace-relative path before any I/O and returns it in
// slash form: not empty, not absolute, no ".." that leaves the root, no NUL.
func Clean(p string) (string, error) {
	switch {
	case p == "":
		return "", pathRefused(p, "is empty")
	case strings.ContainsRune(p, 0):
		return "", pathRefused(p, "contains NUL")
	case strings.HasPrefix(p, "/") || filepath.IsAbs(p) || filepath.VolumeName(p) != "":
		return "", pathRefused(p, "is absolute; give a path relative to the workspace root")
	}
	clean := path.Clean(filepath.ToSlash(p))
	if !filepath.IsLocal(filepath.FromSlash(clean)) {
		return "", pathRefused(p, "leaves the workspace root")
	}
	return clean, nil
}

// Relative is Clean for paths from an editor, which are absolute: an
// absolute path that lies inside the root (after resolving symlinks on
// both sides) becomes relative to it; one outside is refused.
func (w *Workspace) Relative(p string) (string, error) {
	if !filepath.IsAbs(p) {
		return Clean(p)
	}
	root, err := filepath.EvalSymlinks(w.dir)
	if err != nil {
		return "", err
	}
	clean := filepath.Clean(p)
	abs, err := filepath.EvalSymlinks(filepath.Dir(clean))
	if err != nil {
		return "", pathRefused(p, "names a directory that does not exist")
	}
	abs = filepath.Join(abs, filepath.Base(clean))
	rel, err := filepath.Rel(root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return "", pathRefused(p, "is outside the workspace root "+w.dir)
	}
	return Clean(rel)
}

// regular checks that rel names a regular file with one link, or nothing.
func (w *Workspace) regular(rel string) (fs.FileInfo, error) {
	fi, err := w.root.Lstat(filepath.FromSlash(rel))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, refuse(rel, err)
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return nil, pathRefused(rel, "is a symlink; the host edits only regular files")
	case !fi.Mode().IsRegular():
		return nil, pathRefused(rel, fmt.Sprintf("is not a regular file (%v)", fi.Mode().Type()))
	case linkCount(fi) > 1:
		return nil, pathRefused(rel, "has other hard links; editing it would change files elsewhere")
	case fi.Size() > MaxFileSize:
		return nil, pathRefused(rel, fmt.Sprintf("is %d bytes; the host handles at most %d", fi.Size(), MaxFileSize))
	}
	return fi, nil
}

// refuse turns an os.Root escape into a PathError and passes others on.
func refuse(rel string, err error) error {
	if strings.Contains(err.Error(), "escapes from parent") || strings.Contains(err.Error(), "path escapes") {
		return pathRefused(rel, "resolves outside the workspace root")
	}
	return err
}

// Absent reports whether nothing exists at p (not even a symlink): a file a
// proposal may create.
func (w *Workspace) Absent(p string) bool {
	rel, err := Clean(p)
	if err != nil {
		return false
	}
	_, err = w.root.Lstat(filepath.FromSlash(rel))
	return errors.Is(err, fs.ErrNotExist)
}

// ReadFile reads a regular file of the workspace.
func (w *Workspace) ReadFile(p string) ([]byte, error) {
	rel, err := Clean(p)
	if err != nil {
		return nil, err
	}
	if _, err := w.regular(rel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, pathRefused(rel, "does not exist in the workspace "+w.dir)
		}
		return nil, err
	}
	f, err := w.root.OpenFile(filepath.FromSlash(rel), os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, refuse(rel, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err == nil && len(b) > MaxFileSize {
		return nil, pathRefused(rel, "grew past the size limit while being read")
	}
	return b, err
}

// WriteFile replaces the file at p (relative to the root) with data: it
// goes to a temporary file in the same directory, is synced, and is renamed
// over the target, so a reader sees the old or the new content, never a
// mix, and a crash leaves at most a stray temporary file.
func (w *Workspace) WriteFile(p string, data []byte) error {
	var rnd [6]byte
	rand.Read(rnd[:])
	return w.WriteFileVia(p, data, ".tb-"+hex.EncodeToString(rnd[:])+".tmp", nil)
}

// tempPath is where WriteFileVia puts the temporary file named tmp while it
// replaces p: in p's directory.
func tempPath(p, tmp string) string { return path.Join(path.Dir(p), tmp) }

// WriteFileVia is WriteFile through a temporary file of a name the caller
// chose (and can remove after a crash: RemoveTemp). A stale temporary file
// of that name is replaced. beforeRename, when set, runs between the sync
// and the rename (a failpoint of test builds).
func (w *Workspace) WriteFileVia(p string, data []byte, tmpName string, beforeRename func()) error {
	rel, err := Clean(p)
	if err != nil {
		return err
	}
	if len(data) > MaxFileSize {
		return pathRefused(rel, "would exceed the size limit")
	}
	mode := fs.FileMode(0o644)
	fi, err := w.regular(rel)
	switch {
	case err == nil:
		mode = fi.Mode().Perm()
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	tmp := filepath.FromSlash(tempPath(rel, tmpName))
	w.root.Remove(tmp) // a stale one from a crash; never follows a symlink
	f, err := w.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, mode)
	if err != nil {
		return refuse(rel, err)
	}
	_, werr := f.Write(data)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		w.root.Remove(tmp)
		return err
	}
	if beforeRename != nil {
		beforeRename()
	}
	if err := w.root.Rename(tmp, filepath.FromSlash(rel)); err != nil {
		w.root.Remove(tmp)
		return refuse(rel, err)
	}
	// The rename survives a power loss only once its directory is synced;
	// the proposal is recorded applied after this returns.
	d, err := w.root.Open(filepath.FromSlash(path.Dir(rel)))
	if err != nil {
		return err
	}
	if err := errors.Join(d.Sync(), d.Close()); err != nil && runtime.GOOS != "windows" {
		return err
	}
	return nil
}

// RemoveTemp removes the temporary file WriteFileVia would use for p, if a
// crash left it.
func (w *Workspace) RemoveTemp(p, tmpName string) error {
	rel, err := Clean(p)
	if err != nil {
		return err
	}
	if err := w.root.Remove(filepath.FromSlash(tempPath(rel, tmpName))); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
