//go:build !unix

package store

import (
	"fmt"
	"os"
)

// openRegular opens path for reading only if it is a regular file.
func openRegular(path string) (*os.File, error) {
	if fi, err := os.Lstat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): an archive holds only regular files", path, fi.Mode().Type())
	}
	return os.Open(path)
}
