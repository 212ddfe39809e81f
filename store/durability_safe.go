//go:build !tb_nodurability

package store

// unsafeNoDurability is false in every real build. See durability_unsafe.go.
const unsafeNoDurability = false

func lieBeforeCommit([]*appendReq) {}
