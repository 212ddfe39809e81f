//go:build unix

package store

import (
	"fmt"
	"os"
	"syscall"
)

// openRegular opens path for reading only if it is a regular file: it is
// opened without blocking (a FIFO would otherwise wait for a writer for
// ever) and checked with fstat on the descriptor itself.
func openRegular(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is not a regular file (%s): an archive holds only regular files", path, fi.Mode().Type())
	}
	return f, nil
}
