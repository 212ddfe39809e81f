package upstream

import (
	"bytes"
	"io"
	"strconv"
	"time"
)

// maxRetryMs caps the retry field the SDK reads on an upstream's event
// streams. The delay the server asked for is kept on the call's record and
// waited before the SDK's request to come back goes out (resumed), unless
// the gateway's own client comes back first: then the gateway does too,
// as the client would directly. The TypeScript SDK's server (1.29) keeps
// no answer produced while a call's stream is away, so whether a call's
// answer survives polling depends on when its client returns; through the
// gateway it is the same moment as directly.
const maxRetryMs = 25

// retryCap is a call's event stream with every retry field at most
// maxRetryMs (a standalone stream, which no call waits on, keeps its delay).
// A line is held only while it may still be a retry field; everything
// else passes through as it comes.
type retryCap struct {
	io.ReadCloser
	asked   func(time.Duration) // told each delay the server asked for, when set
	out     []byte              // ready for Read
	line    []byte              // the start of a line that may be a retry field
	passing bool                // the current line is not one: it passes through
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
			c.out = append(c.out, c.capRetry(c.line)...)
			c.line = c.line[:0]
		}
	}
}

// capRetry is a whole retry line with its value at most maxRetryMs.
func (c *retryCap) capRetry(line []byte) []byte {
	v := bytes.TrimSpace(bytes.TrimPrefix(line, retryField))
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms < 0 {
		return line
	}
	if c.asked != nil {
		c.asked(time.Duration(min(ms, int64(time.Hour/time.Millisecond))) * time.Millisecond)
	}
	if ms <= maxRetryMs {
		return line
	}
	return []byte("retry: " + strconv.Itoa(maxRetryMs) + "\n")
}
