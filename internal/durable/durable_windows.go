//go:build windows

package durable

// syncDir: NTFS has no directory fsync to ask for; its metadata journal
// orders renames itself.
func syncDir(string) error { return nil }
