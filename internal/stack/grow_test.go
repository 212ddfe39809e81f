package stack

import (
	"testing"
	"unsafe"
)

// A stack that grows is copied to a new place: a local variable's address
// changes across a call that grew it. A fresh goroutine's 12 KiB call moves
// its stack; after Grow it does not.
func TestGrowTakesTheRoomFirst(t *testing.T) {
	moved := func(first bool) bool {
		done := make(chan bool)
		go func() {
			if first {
				Grow()
			}
			var x int
			before := uintptr(unsafe.Pointer(&x))
			deep()
			done <- uintptr(unsafe.Pointer(&x)) != before
		}()
		return <-done
	}
	if !moved(false) {
		t.Fatal("a fresh goroutine's 12 KiB call did not move its stack: the test no longer shows anything")
	}
	if moved(true) {
		t.Error("after Grow, a 12 KiB call still moved the stack")
	}
}

var out byte

//go:noinline
func deep() {
	var pad [12 << 10]byte
	out = pad[out]
}
