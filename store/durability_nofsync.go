//go:build tb_nofsync && !tb_nodurability

package store

// skipFsync makes a build that commits without fsync but otherwise keeps
// the order (answer after commit): what a process crash cannot tell from a
// real build and a power cut can. It exists only so the power-cut test can
// show that (`go build -tags tb_nofsync`). Never ship it.
const (
	unsafeNoDurability = false
	skipFsync          = true
)

func lieBeforeCommit([]*appendReq) {}
