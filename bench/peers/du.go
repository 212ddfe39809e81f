package main

import (
	"io/fs"
	"path/filepath"
	"syscall"
)

// filepathWalk calls fn with the allocated size of each file under dir
// (blocks on disk, not the apparent size: bbolt's file is sparse).
func filepathWalk(dir string, fn func(size int64)) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				fn(st.Blocks * 512)
				return nil
			}
			fn(fi.Size())
		}
		return nil
	})
}
