package mcp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sync"
)

// maxExactID is the largest integer id the SDK echoes exactly: it decodes
// ids through float64.
var maxExactID = big.NewInt(1 << 53)

// lineGuard stands between the client's stdin and the SDK's stream
// decoder, one newline-delimited line at a time:
//   - a line that is not JSON ends the session at once (the decoder would
//     wait for the next line to find out);
//   - a request whose id the SDK cannot echo exactly (null, a fraction, an
//     exponent, an integer past ±2^53) is refused with a JSON-RPC error
//     that carries the id exactly as sent, and never reaches the SDK.
type lineGuard struct {
	r      *bufio.Reader
	max    int    // the longest line, its newline not counted
	long   []byte // a line longer than r's buffer, gathered
	pend   []byte
	err    error
	refuse func(id json.RawMessage, method, msg string)
}

// lineBuffer is the guard's reading buffer: a longer line is gathered, up to
// the maximum, so a session does not allocate and clear the maximum up
// front. oneLineBuffer is a session of one request's (the HTTP front door's
// sessionless path: one per request, so its buffers are most of what the
// request allocates).
const (
	lineBuffer    = 64 << 10
	oneLineBuffer = 4 << 10
)

func newLineGuard(r io.Reader, maxLine, buffer int, refuse func(id json.RawMessage, method, msg string)) *lineGuard {
	return &lineGuard{r: bufio.NewReaderSize(r, min(buffer, maxLine+1)), max: maxLine, refuse: refuse}
}

// readLine returns the next line, its newline included, of at most max+1
// bytes (bufio.ErrBufferFull past that).
func (g *lineGuard) readLine() ([]byte, error) {
	g.long = g.long[:0]
	for {
		part, err := g.r.ReadSlice('\n')
		if len(g.long)+len(part) > g.max+1 || errors.Is(err, bufio.ErrBufferFull) && len(g.long)+len(part) == g.max+1 {
			return nil, bufio.ErrBufferFull
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			g.long = append(g.long, part...)
			continue
		}
		if len(g.long) == 0 {
			return part, err // the usual line: no copy
		}
		g.long = append(g.long, part...)
		return g.long, err
	}
}

// errLineTooLong keeps the words endSession classifies as TooLarge.
var errLineTooLong = errors.New("inbound JSON-RPC frame exceeded the configured maximum line length")

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pend) == 0 {
		if g.err != nil {
			return 0, g.err
		}
		line, err := g.readLine()
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			g.err = errLineTooLong
			continue
		case err != nil && len(line) == 0:
			g.err = err
			continue
		case err != nil:
			g.err = err // the last line had no newline: judge it, then end
		}
		if out, ok := g.check(line); ok {
			g.pend = append(g.pend[:0], out...)
		}
	}
	n := copy(p, g.pend)
	g.pend = g.pend[n:]
	return n, nil
}

// check returns the line to hand on, or false when it was answered here.
func (g *lineGuard) check(line []byte) ([]byte, bool) {
	t := bytes.Trim(line, " \t\r\n") // JSON's whitespace, no more
	if len(t) == 0 {
		return nil, false
	}
	malformed := func() ([]byte, bool) {
		g.err = fmt.Errorf("malformed JSON-RPC frame (%d bytes): not one complete JSON value", len(t))
		return nil, false
	}
	if t[0] != '{' { // a batch or a scalar: the SDK's to judge
		if !json.Valid(t) {
			return malformed()
		}
		return line, true
	}
	// One pass: Unmarshal checks the whole text before it decodes, and an
	// object decodes into a map unless it is not JSON.
	var m map[string]json.RawMessage
	if json.Unmarshal(t, &m) != nil {
		return malformed()
	}
	id, hasID := m["id"]
	_, hasMethod := m["method"]
	if !hasID || !hasMethod {
		return line, true
	}
	if msg := badID(id); msg != "" {
		var method string
		json.Unmarshal(m["method"], &method)
		g.refuse(id, method, msg)
		return nil, false
	}
	return line, true
}

// badID says why the SDK could not echo id exactly, or "" when it can.
func badID(id json.RawMessage) string {
	switch id[0] {
	case '"':
		return ""
	case 'n':
		return "a request id must be a string or an integer, not null (a request without an id is a notification)"
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		if bytes.ContainsAny(id, ".eE") {
			return fmt.Sprintf("request id %s is not an integer: use a string or an integer id", id)
		}
		n, ok := new(big.Int).SetString(string(id), 10)
		if !ok || n.CmpAbs(maxExactID) > 0 {
			return fmt.Sprintf("request id %s is beyond ±2^53, which this server cannot echo exactly: use a string or a smaller integer id", id)
		}
		return ""
	}
	return "a request id must be a string or an integer"
}

// lockedWriter serializes whole writes: the SDK writes each message with
// one Write, and refusals written beside it must not interleave.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }

type readCloser struct {
	io.Reader
	io.Closer
}
