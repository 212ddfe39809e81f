//go:build !unix

package host

import "io/fs"

const noFollow = 0

// linkCount is not known here; os.Root still confines every path.
func linkCount(fs.FileInfo) uint64 { return 1 }
