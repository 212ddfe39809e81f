//go:build !tb_nodurability && !tb_nofsync

package store

// unsafeNoDurability and skipFsync are false in every real build. See
// durability_unsafe.go and durability_nofsync.go.
const (
	unsafeNoDurability = false
	skipFsync          = false
)

func lieBeforeCommit([]*appendReq) {}
