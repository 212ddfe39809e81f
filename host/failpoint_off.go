//go:build !tb_testtools

package host

// afterWrite is a failpoint of test builds only (see failpoint_on.go).
func afterWrite(int) {}

// beforeRename is a failpoint of test builds only (see failpoint_on.go).
func beforeRename(int) {}

// beforeJournal is a failpoint of test builds only (see failpoint_on.go).
func beforeJournal() {}
