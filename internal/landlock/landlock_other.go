//go:build !linux

package landlock

// ABI is 0 where Landlock does not exist: servers run unconfined, and
// their start and config check say so.
func ABI() int { return 0 }
