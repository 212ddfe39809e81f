package store

import (
	"os"
	"syscall"
)

// fdatasync is the sync bbolt uses on Linux; the fsync probe measures it.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
