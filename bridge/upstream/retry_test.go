package upstream

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// readAll reads through a retryCap fed one byte at a time (a field split
// across reads is still seen whole).
func readAll(t *testing.T, in string) string {
	t.Helper()
	out, err := io.ReadAll(&retryCap{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(in)))})
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func TestRetryFieldIsCapped(t *testing.T) {
	in := "id: a\nretry: 5000\ndata: \n\nevent: message\ndata: {\"retry: 9000\":1}\n\nretry:10\nretry: soon\r\nretried: 7000\nretry: 900"
	want := "id: a\nretry: 25\ndata: \n\nevent: message\ndata: {\"retry: 9000\":1}\n\nretry:10\nretry: soon\r\nretried: 7000\nretry: 900"
	if got := readAll(t, in); got != want {
		t.Errorf("capped:\n got %q\nwant %q", got, want)
	}
	// Its harmless twin: a stream without a long retry passes unchanged,
	// whatever the reads' sizes.
	plain := "id: 1\nevent: message\ndata: " + strings.Repeat("x", 10000) + "\n\n"
	if got := readAll(t, plain); got != plain {
		t.Error("a stream without a retry field changed")
	}
	out, _ := io.ReadAll(&retryCap{ReadCloser: io.NopCloser(strings.NewReader(plain))})
	if string(out) != plain {
		t.Error("a stream read in large pieces changed")
	}
}

// FuzzRetryCap: any stream comes out whole but for its retry fields, each
// at most maxRetryMs, and nothing panics.
func FuzzRetryCap(f *testing.F) {
	f.Add([]byte("retry: 5000\ndata: x\n\n"))
	f.Add([]byte("retr"))
	f.Add([]byte("data: retry: 99999\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := io.ReadAll(&retryCap{ReadCloser: io.NopCloser(iotest.HalfReader(bytes.NewReader(in)))})
		if err != nil {
			t.Fatal(err)
		}
		ins, outs := bytes.SplitAfter(in, []byte("\n")), bytes.SplitAfter(out, []byte("\n"))
		if len(ins) != len(outs) {
			t.Fatalf("%d lines in, %d out", len(ins), len(outs))
		}
		for i := range ins {
			if !bytes.Equal(ins[i], outs[i]) && !(bytes.HasPrefix(ins[i], retryField) && string(outs[i]) == "retry: 25\n") {
				t.Fatalf("line %d: %q became %q", i, ins[i], outs[i])
			}
		}
	})
}
