package upstream

import (
	"bytes"
	"io"
	"strconv"
)

// maxRetryMs caps the retry field of an upstream's event streams: after a
// server ends a call's stream before answering (SEP-1699 polling), the
// gateway comes back for the answer within this many milliseconds,
// whatever delay the server asked for. The TypeScript SDK's server (1.29)
// keeps no answer produced while a call's stream is away — it throws it
// away — so a client that waits as told loses the answer of a call that
// ends during the wait; its own conformance client comes back at once.
// The gateway's client is asked to come back as the server asked
// (executor.WithPolled), and its answer waits for it in the front door.
const maxRetryMs = 25

// retryCap is an event stream with every retry field at most maxRetryMs.
// A line is held only while it may still be a retry field; everything
// else passes through as it comes.
type retryCap struct {
	io.ReadCloser
	out     []byte // ready for Read
	line    []byte // the start of a line that may be a retry field
	passing bool   // the current line is not one: it passes through
	err     error
	buf     [4096]byte
}

func (c *retryCap) Read(p []byte) (int, error) {
	for len(c.out) == 0 {
		if c.err != nil {
			return 0, c.err
		}
		n, err := c.ReadCloser.Read(c.buf[:])
		c.feed(c.buf[:n])
		if err != nil {
			c.err = err
			c.out = append(c.out, c.line...) // a stream cut mid-line ends as it was
			c.line = nil
		}
	}
	n := copy(p, c.out)
	c.out = c.out[n:]
	return n, nil
}

var retryField = []byte("retry:")

func (c *retryCap) feed(b []byte) {
	for len(b) > 0 {
		chunk, end := b, false
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			chunk, end = b[:i+1], true
		}
		b = b[len(chunk):]
		if c.passing {
			c.out = append(c.out, chunk...)
			c.passing = !end
			continue
		}
		c.line = append(c.line, chunk...)
		n := min(len(c.line), len(retryField))
		switch {
		case !bytes.Equal(c.line[:n], retryField[:n]): // not a retry field
			c.out = append(c.out, c.line...)
			c.line, c.passing = c.line[:0], !end
		case end:
			c.out = append(c.out, capRetry(c.line)...)
			c.line = c.line[:0]
		}
	}
}

// capRetry is a whole retry line with its value at most maxRetryMs.
func capRetry(line []byte) []byte {
	v := bytes.TrimSpace(bytes.TrimPrefix(line, retryField))
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms <= maxRetryMs {
		return line
	}
	return []byte("retry: " + strconv.Itoa(maxRetryMs) + "\n")
}
