//go:build tb_nodurability

package store

import "time"

// unsafeNoDurability makes a build that lies: it skips fsync and answers
// appenders before their transaction commits. It exists only so the crash
// test can show it catches a store that acknowledges what the disk does not
// hold (`go build -tags tb_nodurability`). Never ship it.
const (
	unsafeNoDurability = true
	skipFsync          = true
)

// lieBeforeCommit answers the appenders of a batch whose transaction has not
// committed, then dawdles as a slow disk would, widening the window in which
// a crash loses what was acknowledged.
func lieBeforeCommit(batch []*appendReq) {
	for _, r := range batch {
		r.answer()
	}
	time.Sleep(2 * time.Millisecond)
}
