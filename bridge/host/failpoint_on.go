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
