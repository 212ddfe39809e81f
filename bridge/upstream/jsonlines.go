package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
)

// streamedMethods are the requests whose answer a server on the new
// protocol may stream as JSON messages one after another in an
// application/json body (notifications, then the response), not as SSE.
var streamedMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

// asEventStream hands an application/json answer to such a request on as
// the event stream it stands for, message by message as they arrive: the
// SDK reads one message from a JSON body, and would wait for a response
// that came second until the call's deadline. maxFrame bounds one message
// (0: 64 MiB).
func asEventStream(r *http.Request, resp *http.Response, maxFrame int) {
	if !streamedMethods[r.Header.Get("Mcp-Method")] || r.Header.Get("Mcp-Protocol-Version") < newProtocol ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return
	}
	if maxFrame <= 0 {
		maxFrame = 64 << 20
	}
	resp.Header.Set("Content-Type", "text/event-stream")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	capped := &perMessageCap{r: resp.Body, max: int64(maxFrame) + 64<<10} // the decoder reads ahead: a buffer's slack
	resp.Body = &jsonAsSSE{body: resp.Body, dec: json.NewDecoder(capped), cap: capped, max: maxFrame}
}

// perMessageCap fails a read once more than max bytes were read since the
// last message was decoded: a server streaming one endless value is cut
// off, not buffered whole.
type perMessageCap struct {
	r   io.Reader
	n   int64
	max int64
}

func (c *perMessageCap) Read(p []byte) (int, error) {
	if c.n > c.max {
		return 0, errors.New("a message of the server's answer exceeds the frame cap")
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// jsonAsSSE reads JSON values off body and yields each as one SSE event.
type jsonAsSSE struct {
	body io.ReadCloser
	dec  *json.Decoder
	cap  *perMessageCap
	max  int
	buf  bytes.Buffer
	err  error
}

func (j *jsonAsSSE) Read(p []byte) (int, error) {
	for j.buf.Len() == 0 && j.err == nil {
		var m json.RawMessage
		if err := j.dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				j.err = io.EOF
			} else {
				j.err = err
			}
			break
		}
		if len(m) > j.max {
			j.err = errors.New("a message of the server's answer exceeds the frame cap")
			break
		}
		j.cap.n = 0
		if ahead, ok := j.dec.Buffered().(interface{ Len() int }); ok {
			j.cap.n = int64(ahead.Len()) // what is read ahead belongs to the next message
		}
		j.buf.WriteString("event: message\ndata: ")
		json.Compact(&j.buf, m)
		j.buf.WriteString("\n\n")
	}
	if j.buf.Len() > 0 {
		return j.buf.Read(p)
	}
	return 0, j.err
}

func (j *jsonAsSSE) Close() error { return j.body.Close() }

// errorAsAnswer hands a 4xx answer to a request on the new protocol whose
// body is the JSON-RPC error for it (the protocol sends -32021, -32602 and
// its kin with HTTP 400 or 404) on as the JSON answer it is: the SDK reads
// a 4xx as a broken transport, loses the server's code and drops the
// link for every client on it.
func errorAsAnswer(r *http.Request, resp *http.Response) {
	if resp.StatusCode < 400 || resp.StatusCode >= 500 || r.Header.Get("Mcp-Protocol-Version") < newProtocol ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil {
		return
	}
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code int64 `json:"code"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &m) != nil || m.Error == nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return
	}
	resp.StatusCode, resp.Status = http.StatusOK, "200 OK"
}
