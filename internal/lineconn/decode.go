// Package lineconn is the stdio transport of MCP — newline-delimited
// JSON-RPC over a reader and a writer — as an sdk.Connection that checks
// each message with encoding/json and splits its members in one more pass
// (members.go).
//
// The SDK's own (sdk.IOTransport) decodes every message three times with a
// decoder that allocates and clears 32 KiB each time (first as a batch, then
// the message, then its method): about 66 KB and 15 µs per message, a third
// of everything the bridge allocated per call (docs/ARCHITECTURE.md,
// "Performance"). This one keeps the SDK's behaviour where it is visible:
// keys are matched exactly, a frame over the cap ends the connection with
// the SDK's words, data after a message on its line is an error, and Close
// unblocks a Read. A batch (2025-03-26; no protocol since has them) is
// taken only where asked (Transport.Batches), and answered message by
// message, not as an array.
package lineconn

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const wireVersion = "2.0"

// ErrInvalidRequest is a message with neither a method nor an id.
var ErrInvalidRequest = errors.New("JSON RPC invalid request")

// Decode is jsonrpc.DecodeMessage: a *jsonrpc.Request when the message has
// a method, else a *jsonrpc.Response.
func Decode(data []byte) (jsonrpc.Message, error) {
	m, err := members(data)
	if err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	if m == nil { // the text null
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", "", wireVersion)
	}
	var tag string
	if err := field(m, "jsonrpc", &tag); err != nil {
		return nil, err
	}
	if tag != wireVersion {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", tag, wireVersion)
	}
	var rawID any
	if err := field(m, "id", &rawID); err != nil {
		return nil, err
	}
	id, err := jsonrpc.MakeID(rawID)
	if err != nil {
		return nil, err
	}
	if _, ok := m["method"]; ok {
		var method string
		if err := field(m, "method", &method); err != nil {
			return nil, err
		}
		return &jsonrpc.Request{Method: method, ID: id, Params: m["params"]}, nil
	}
	if !id.IsValid() {
		return nil, ErrInvalidRequest
	}
	resp := &jsonrpc.Response{ID: id, Result: m["result"]}
	if raw, ok := m["error"]; ok && string(raw) != "null" {
		e, err := decodeError(raw)
		if err != nil {
			return nil, err
		}
		resp.Error = e
	}
	return resp, nil
}

// field decodes m[key] into v when it is there.
func field(m map[string]json.RawMessage, key string, v any) error {
	raw, ok := m[key]
	if !ok {
		return nil
	}
	if s, ok := v.(*string); ok {
		if plain, ok := plainString(raw); ok { // most are: "2.0", "tools/call"
			*s = plain
			return nil
		}
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	return nil
}

// decodeError decodes an error object, its keys matched exactly.
func decodeError(raw json.RawMessage) (*jsonrpc.Error, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: %w", err)
	}
	e := &jsonrpc.Error{}
	if err := field(m, "code", &e.Code); err != nil {
		return nil, err
	}
	if err := field(m, "message", &e.Message); err != nil {
		return nil, err
	}
	e.Data = m["data"]
	return e, nil
}

// plainString is the string raw holds when it is one without escapes in
// valid UTF-8: what json.Unmarshal would make of it, without its work. raw
// is a member of a valid document, so a string in it holds no quote or
// control character unescaped.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' {
		return "", false
	}
	body := raw[1 : len(raw)-1]
	if bytes.IndexByte(body, '\\') >= 0 || !utf8.Valid(body) {
		return "", false
	}
	return string(body), true
}
