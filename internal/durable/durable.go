// Package durable writes files and directories that survive a power loss:
// synced temp files renamed into place, synced parent directories.
package durable

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// SyncDir fsyncs a directory: what was created, renamed or removed in it
// survives a power loss only after this. (Windows has no directory fsync;
// there it is a no-op.)
func SyncDir(dir string) error { return syncDir(dir) }

// MkdirAll is os.MkdirAll whose new directories survive a power loss: the
// parent of each one it creates is synced.
func MkdirAll(dir string, perm os.FileMode) error {
	if fi, err := os.Stat(dir); err == nil {
		if !fi.IsDir() {
			return &fs.PathError{Op: "mkdir", Path: dir, Err: fs.ErrExist}
		}
		return nil
	}
	parent := filepath.Dir(dir)
	if parent != dir {
		if err := MkdirAll(parent, perm); err != nil {
			return err
		}
	}
	if err := os.Mkdir(dir, perm); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // made meanwhile by another process, which syncs it
		}
		return err
	}
	return SyncDir(parent)
}

// WriteFileAtomic replaces path with b (mode) so that a reader, or the disk
// after a power loss, holds the old or the new content, never a part or
// nothing: a synced temp file, a rename, a synced directory.
func WriteFileAtomic(path string, b []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return err
	}
	if err := errors.Join(tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}
