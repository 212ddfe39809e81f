package lsp

import (
	"bufio"
	"bytes"
	"testing"
)

// Whatever a language server writes, the reader returns a message of the
// declared length or an error, never more than MaxMessage, never a panic.
func FuzzReadMessage(f *testing.F) {
	f.Add([]byte("Content-Length: 2\r\n\r\n{}"))
	f.Add([]byte("Content-Length: 99999999999\r\n\r\n"))
	f.Add([]byte("Content-Type: x\r\ncontent-length:3\r\n\r\nabc"))
	f.Add([]byte("HTTP/1.1 200 OK\r\n\r\n<html>"))
	f.Add([]byte("Content-Length: -1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bufio.NewReader(bytes.NewReader(data))
		for range 4 {
			body, err := readMessage(r)
			if err != nil {
				return
			}
			if len(body) > MaxMessage {
				t.Fatalf("a message of %d bytes", len(body))
			}
			again, err := readMessage(bufio.NewReader(bytes.NewReader(frame(body))))
			if err != nil || !bytes.Equal(again, body) {
				t.Fatalf("frame/read round trip: %v", err)
			}
		}
	})
}
