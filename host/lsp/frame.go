// Package lsp drives a language server for the workspace host: the
// Language Server Protocol's framing, a JSON-RPC connection, and one server
// process per language and root, each request and answer a recorded
// boundary crossing (docs/pipe-protocol.md's host, DESIGN §9).
package lsp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// MaxMessage caps one message from a language server: a reference list of
// a large module fits; a server that sends more is broken or hostile.
const MaxMessage = 64 << 20

// readMessage reads one message: headers (Content-Length required,
// Content-Type ignored), a blank line, then exactly that many bytes.
func readMessage(r *bufio.Reader) ([]byte, error) {
	length := -1
	for n := 0; ; n++ {
		line, err := r.ReadString('\n')
		if err != nil {
			if err == io.EOF && n == 0 && line == "" {
				return nil, io.EOF
			}
			return nil, fmt.Errorf("lsp: header: %w", err)
		}
		if n > 32 || len(line) > 1024 {
			return nil, fmt.Errorf("lsp: header too long")
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("lsp: header line %q has no colon", line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			v, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || v < 0 {
				return nil, fmt.Errorf("lsp: Content-Length %q", value)
			}
			length = v
		}
	}
	if length < 0 {
		return nil, fmt.Errorf("lsp: a message without Content-Length")
	}
	if length > MaxMessage {
		return nil, fmt.Errorf("lsp: a message of %d bytes; at most %d", length, MaxMessage)
	}
	body := make([]byte, length)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, fmt.Errorf("lsp: body: %w", err)
	}
	return body, nil
}

// frame returns body with its header.
func frame(body []byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "Content-Length: %d\r\n\r\n", len(body))
	b.Write(body)
	return b.Bytes()
}
