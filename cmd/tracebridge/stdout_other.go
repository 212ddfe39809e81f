//go:build !unix

package main

import "os"

// protectStdout on systems without dup2 returns stdout as is: stray writes
// to it are not diverted there.
func protectStdout() (*os.File, error) { return os.Stdout, nil }
