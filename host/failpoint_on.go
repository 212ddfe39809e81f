//go:build tb_testtools

package host

import (
	"os"
	"strconv"
	"syscall"
)

// afterWrite kills this process with SIGKILL once it has replaced n files of
// a proposal, when TB_FAILPOINT_KILL_AFTER_FILES=n: how the end-to-end test
// crashes a host mid-set. Compiled only into -tags tb_testtools builds.
func afterWrite(n int) {
	if k, err := strconv.Atoi(os.Getenv("TB_FAILPOINT_KILL_AFTER_FILES")); err == nil && k == n {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// beforeRename kills this process with SIGKILL when file n of a proposal
// is written and synced to its temporary file but not yet renamed, when
// TB_FAILPOINT_KILL_BEFORE_RENAME=n.
func beforeRename(n int) {
	if k, err := strconv.Atoi(os.Getenv("TB_FAILPOINT_KILL_BEFORE_RENAME")); err == nil && k == n {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}

// beforeJournal kills this process with SIGKILL once proposal.applying is
// durable but before the journal is written, when
// TB_FAILPOINT_KILL_BEFORE_JOURNAL=1.
func beforeJournal() {
	if os.Getenv("TB_FAILPOINT_KILL_BEFORE_JOURNAL") == "1" {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
	}
}
