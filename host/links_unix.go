//go:build unix

package host

import (
	"io/fs"
	"syscall"
)

// noFollow makes the final open refuse a symlink that appeared after the
// Lstat check.
const noFollow = syscall.O_NOFOLLOW

func linkCount(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}
