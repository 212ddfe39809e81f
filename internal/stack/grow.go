// Package stack grows a goroutine's stack early, where growing is cheap.
//
// A goroutine starts with a small stack that the runtime doubles, copying
// everything on it, each time a call needs more. A request's handler runs
// on a fresh goroutine (the go-sdk starts one per request) and reaches its
// deepest frames — JSON Schema validation, the policy, the upstream call —
// with most of its stack in use, so each doubling there copies the most.
// Grow, called where the handler starts, takes the room once while the
// stack is shallow. (CockroachDB's growstack does the same for the same
// reason.)
package stack

// Room is what a call through the bridge needs: its deepest path (the
// executor validating arguments under the go-sdk's dispatch) grows a fresh
// goroutine's stack to 32 KiB.
const Room = 16 << 10

var sink byte

// Grow makes the calling goroutine's stack at least Room bytes deeper
// than it is now.
func Grow() { sink = grow() }

//go:noinline
func grow() byte {
	var pad [Room]byte
	return pad[sink] // read, so the frame is not optimized away
}
