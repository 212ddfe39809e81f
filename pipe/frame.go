package pipe

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tracebridge/tracebridge/events"
)

// Version is the envelope version this package speaks.
const Version = 1

// MaxFrame caps one frame, newline included: a file or an answer as long
// as the log keeps whole (events.DefaultMaxPayload), and its envelope. A
// frame is read in pieces; memory grows with the frame, not the cap.
const MaxFrame = events.DefaultMaxPayload + 1<<20

// readBuffer is the reader's buffer: most frames fit it.
const readBuffer = 64 << 10

// Request is what the bridge sends.
type Request struct {
	V           int             `json:"v"`
	Command     string          `json:"command"`
	RequestID   string          `json:"requestId"`
	OperationID string          `json:"operationId"`
	Traceparent string          `json:"traceparent,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// Response is what the host answers.
type Response struct {
	V           int             `json:"v"`
	RequestID   string          `json:"requestId"`
	OperationID string          `json:"operationId"`
	OK          bool            `json:"ok"`
	Code        events.Code     `json:"code,omitempty"`
	Message     string          `json:"message,omitempty"`
	Payload     json.RawMessage `json:"payload,omitempty"`
}

// errFrameTooLarge is returned by readFrame for a line over MaxFrame.
var errFrameTooLarge = errors.New("frame exceeds the size cap")

// readFrame reads one line: a line longer than MaxFrame is refused once it
// passes the cap, before it is buffered further. A frame that fits the
// reader's buffer is returned without a copy (valid until the next read).
func readFrame(r *bufio.Reader) ([]byte, error) {
	var long []byte
	for {
		frag, err := r.ReadSlice('\n')
		n := len(long) + len(frag)
		if errors.Is(err, bufio.ErrBufferFull) {
			if n >= MaxFrame { // MaxFrame bytes and no newline yet
				return nil, errFrameTooLarge
			}
			long = append(long, frag...)
			continue
		}
		if n > MaxFrame {
			return nil, errFrameTooLarge
		}
		if err != nil {
			return nil, err
		}
		if long != nil {
			frag = append(long, frag...)
		}
		return bytes.TrimRight(frag, "\r\n"), nil
	}
}

func newReader(r interface{ Read([]byte) (int, error) }) *bufio.Reader {
	return bufio.NewReaderSize(r, readBuffer)
}

// decodeRequest parses one request frame strictly: version 1, known fields
// only, a command in commands, an operation id. A frame that cannot be used
// is an *events.Err saying why (TooLarge, MalformedEnvelope,
// UnknownCommand); the request comes back with it when it was readable
// enough to name its operation, so the refusal can be answered.
func decodeRequest(b []byte, commands map[string]bool) (Request, error) {
	var req Request
	if len(b) > MaxFrame {
		return Request{}, events.Errorf(events.CodeTooLarge, "frame of %d bytes exceeds %d", len(b), MaxFrame)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return Request{}, events.Errorf(events.CodeMalformedEnvelope, "not a request envelope: %v", err)
	}
	if dec.More() {
		return Request{}, events.Errorf(events.CodeMalformedEnvelope, "trailing data after the envelope")
	}
	fe := func(code events.Code, msg string) error { return &events.Err{Code: code, Msg: msg} }
	switch {
	case req.V != Version:
		return req, fe(events.CodeMalformedEnvelope, fmt.Sprintf("envelope version %d; this host speaks %d", req.V, Version))
	case req.OperationID == "" || len(req.OperationID) > 64:
		return req, fe(events.CodeMalformedEnvelope, "operationId is required (at most 64 characters)")
	case len(req.RequestID) > 64 || len(req.Traceparent) > 55:
		return req, fe(events.CodeMalformedEnvelope, "requestId or traceparent too long")
	case req.Command == "":
		return req, fe(events.CodeUnknownCommand, "empty command")
	case !commands[req.Command]:
		return req, fe(events.CodeUnknownCommand, fmt.Sprintf("unknown command %q", req.Command))
	}
	return req, nil
}

// decodeResponse parses one response frame.
func decodeResponse(b []byte) (Response, error) {
	var resp Response
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		return resp, events.Errorf(events.CodeMalformedEnvelope, "not a response envelope: %v", err)
	}
	if resp.V != Version || resp.OperationID == "" {
		return resp, events.Errorf(events.CodeMalformedEnvelope, "response lacks version 1 or an operationId")
	}
	// A refusal names a known code (it travels to the tool result, the
	// diagram and the UI); one that does not is the host's fault, said so,
	// and its caller still gets an answer rather than a timeout.
	if !resp.OK && !events.Known(resp.Code) {
		resp.Message = fmt.Sprintf("the host refused without a known code (code %q, message %q): check that the bridge and the host run the same tracebridge version", resp.Code, resp.Message)
		resp.Code, resp.Payload = events.CodeMalformedEnvelope, nil
	}
	return resp, nil
}

// encodeFrame marshals v and appends the newline.
func encodeFrame(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if len(b)+1 > MaxFrame {
		return nil, events.Errorf(events.CodeTooLarge, "frame of %d bytes exceeds %d", len(b)+1, MaxFrame)
	}
	return append(b, '\n'), nil
}
