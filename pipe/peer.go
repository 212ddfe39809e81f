package pipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// Peer is one accepted connection as the host's handlers see it. Most peers
// only ask (the bridge, the CLI); an editor that attached is also told
// (Notify) and asked (Call) on the connection it opened
// (docs/pipe-protocol.md, "Editors").
type Peer struct {
	UID   int
	write func([]byte) error

	asks    atomic.Bool // set by the first Call: the reader then looks for responses
	mu      sync.Mutex
	pending map[string]chan Response
	closed  bool
	done    chan struct{}
}

// Notification is a frame the host sends an editor without waiting for an
// answer.
type Notification struct {
	V       int    `json:"v"`
	Notify  string `json:"notify"`
	Payload any    `json:"payload,omitempty"`
}

// What the host sends an attached editor: one request (it answers) and
// notifications (it does not).
const (
	CmdEditorApplyEdit    = "editor.apply_edit"
	NotifyReviewPresented = "review.presented"
	NotifyProposalChanged = "proposal.changed"
)

type peerKey struct{}

// PeerOf returns the connection a handler's request arrived on (nil outside
// a handler).
func PeerOf(ctx context.Context) *Peer {
	p, _ := ctx.Value(peerKey{}).(*Peer)
	return p
}

func newPeer(uid int, write func([]byte) error) *Peer {
	return &Peer{UID: uid, write: write, pending: map[string]chan Response{}, done: make(chan struct{})}
}

// Done is closed when the connection ends.
func (p *Peer) Done() <-chan struct{} { return p.done }

// Notify sends a notification.
func (p *Peer) Notify(name string, payload any) error {
	b, err := encodeFrame(Notification{V: Version, Notify: name, Payload: payload})
	if err != nil {
		return err
	}
	return p.write(b)
}

// errPeerGone is a call whose connection ended before the answer.
var errPeerGone = errors.New("the editor's connection closed before it answered")

// Call sends req to the peer and waits for its response, at most timeout.
// A peer that does not answer in time, or whose connection ends, gives an
// *events.Err (PipeTimeout, PipeUnavailable); a refusal comes back as the
// response it is.
func (p *Peer) Call(ctx context.Context, req Request, timeout time.Duration) (Response, error) {
	req.V = Version
	frame, err := encodeFrame(req)
	if err != nil {
		return Response{}, err
	}
	ch := make(chan Response, 1)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: errPeerGone.Error()}
	}
	if _, dup := p.pending[req.OperationID]; dup {
		p.mu.Unlock()
		return Response{}, fmt.Errorf("operation %s already in flight", req.OperationID)
	}
	p.pending[req.OperationID] = ch
	p.mu.Unlock()
	p.asks.Store(true)
	defer func() { p.mu.Lock(); delete(p.pending, req.OperationID); p.mu.Unlock() }()
	if err := p.write(frame); err != nil {
		return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: "the editor's connection broke: " + err.Error()}
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case resp, ok := <-ch:
		if !ok {
			return Response{}, &events.Err{Code: events.CodePipeUnavailable, Msg: errPeerGone.Error()}
		}
		return resp, nil
	case <-timer.C:
		return Response{}, &events.Err{Code: events.CodePipeTimeout, Msg: fmt.Sprintf("the editor did not answer %s within %v", req.Command, timeout)}
	case <-ctx.Done():
		return Response{}, &events.Err{Code: events.CodeCancelled, Msg: ctx.Err().Error()}
	}
}

// answer delivers a response frame to its call; it reports whether line
// was a response (a frame with "ok" and no "command") the peer waited for
// or could have: any other frame is a request.
func (p *Peer) answer(line []byte) bool {
	if !p.asks.Load() {
		return false
	}
	var probe struct {
		Command *string `json:"command"`
		OK      *bool   `json:"ok"`
	}
	if json.Unmarshal(line, &probe) != nil || probe.Command != nil || probe.OK == nil {
		return false
	}
	resp, err := decodeResponse(line)
	if err != nil {
		return true // unreadable: its caller times out, with the reason in its code
	}
	p.mu.Lock()
	ch := p.pending[resp.OperationID]
	delete(p.pending, resp.OperationID)
	p.mu.Unlock()
	if ch != nil {
		ch <- resp
	}
	return true
}

// end fails the calls in flight and closes Done.
func (p *Peer) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	p.closed = true
	for op, ch := range p.pending {
		close(ch)
		delete(p.pending, op)
	}
	close(p.done)
}
