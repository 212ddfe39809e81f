package upstream

import (
	"crypto/sha256"
	"strconv"
	"sync"

	"github.com/tracebridge/tracebridge/events"
)

// Attributes of a multi-round-trip call's later rounds (SEP-2322): each
// retry is a request of its own (a new JSON-RPC id, its own run), and its
// upstream events name the request that began the call and which round
// this is, so the rounds read as one call.
const (
	AttrRoundOf = "roundOf" // the request id of the call's first round
	AttrRound   = "round"   // 2 for the first retry, and so on
)

// maxRounds bounds the states remembered; the oldest go first.
const maxRounds = 1024

// roundBook remembers which call a retry continues: by the server's
// requestState, or — a server may send none — by the client, the tool and
// its arguments, which a retry repeats.
type roundBook struct {
	mu    sync.Mutex
	by    map[[32]byte]roundRef
	order [][32]byte
}

type roundRef struct {
	first events.ID
	n     int // the round that answered with this state
}

// roundKey is what a call's round and its retry share.
func roundKey(state, client, tool string, args []byte) [32]byte {
	if state != "" {
		return sha256.Sum256([]byte("state\x00" + state))
	}
	return sha256.Sum256([]byte("call\x00" + client + "\x00" + tool + "\x00" + string(args)))
}

// asked notes that round n of the call first begun by request first was
// answered with input requests (k: roundKey).
func (b *roundBook) asked(k [32]byte, first events.ID, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.by == nil {
		b.by = map[[32]byte]roundRef{}
	}
	if _, ok := b.by[k]; !ok {
		b.order = append(b.order, k)
	}
	b.by[k] = roundRef{first: first, n: n}
	for len(b.order) > maxRounds {
		delete(b.by, b.order[0])
		b.order = b.order[1:]
	}
}

// retry is the round a retry (k: roundKey) is, and the call's first
// request (req itself, round 1, for a call the book does not know).
func (b *roundBook) retry(k [32]byte, req events.ID) (first events.ID, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.by[k]; ok {
		return r.first, r.n + 1
	}
	return req, 1
}

// roundAttrs are the attributes of round n of the call begun by first
// (none for a first round).
func roundAttrs(first events.ID, n int) []string {
	if n <= 1 {
		return nil
	}
	return []string{AttrRoundOf, first.String(), AttrRound, strconv.Itoa(n)}
}
