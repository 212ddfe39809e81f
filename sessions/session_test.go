package sessions

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func recorded(t testing.TB) [][]byte {
	files, _ := filepath.Glob(filepath.Join("..", "artifacts", "sessions", "*.jsonl"))
	var out [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Fatal("no recorded sessions in artifacts/sessions")
	}
	return out
}

// Bad session files give a SessionError naming the line and what is wrong.
func TestDecodeSessionErrors(t *testing.T) {
	good := recorded(t)[0]
	lines := strings.SplitAfter(string(good), "\n")
	cases := map[string]struct {
		in   string
		want string
	}{
		"empty":          {"", "empty file"},
		"not json":       {"hello\n", "line 1: not a session header"},
		"other schema":   {strings.Replace(lines[0], "session/v1", "session/v2", 1), `schema "tracebridge.session/v2"`},
		"truncated line": {lines[0] + lines[1][:len(lines[1])/2], "line 2: corrupt or truncated step"},
		"missing steps":  {lines[0] + lines[1], "truncated or was edited"},
		"unknown step":   {lines[0] + `{"step":"teleport"}` + "\n", `unknown step "teleport"`},
		"unknown field":  {lines[0] + `{"step":"client","method":"x","surprise":1}` + "\n", "unknown field"},
		"blank line":     {lines[0] + "\n", "line 2: empty line"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeSession(strings.NewReader(tc.in))
			var se *SessionError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a SessionError containing %q", err, tc.want)
			}
		})
	}
}

// A decoded session encodes back to the same bytes.
func TestSessionRoundTrip(t *testing.T) {
	for _, b := range recorded(t) {
		s, err := DecodeSession(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := s.Encode(&out); err != nil {
			t.Fatal(err)
		}
		if out.String() != string(b) {
			t.Fatalf("round trip changed the file:\n%s\n---\n%s", b, out.String())
		}
	}
}

// FuzzDecodeSession: no input panics; whatever decodes encodes and decodes
// again to the same session.
func FuzzDecodeSession(f *testing.F) {
	for _, b := range recorded(f) {
		f.Add(b)
	}
	f.Add([]byte(`{"schema":"tracebridge.session/v1","steps":1}` + "\n" + `{"step":"host","command":"x","answer":{"ok":false,"code":"Drift"}}` + "\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		s, err := DecodeSession(bytes.NewReader(in))
		if err != nil {
			var se *SessionError
			if !errors.As(err, &se) {
				t.Fatalf("error is not a SessionError: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := s.Encode(&out); err != nil {
			t.Fatal(err)
		}
		again, err := DecodeSession(&out)
		if err != nil {
			t.Fatalf("re-decoding what was encoded: %v\n%s", err, out.String())
		}
		if len(again.Steps) != len(s.Steps) || again.Header.Name != s.Header.Name {
			t.Fatalf("round trip changed the session")
		}
	})
}

// A step a re-drive could not act on is refused with its line and what it
// lacks: a hostile or hand-edited file never half-runs.
func TestDecodeSessionRefusesStepsItCannotRun(t *testing.T) {
	header := strings.SplitAfter(string(recorded(t)[0]), "\n")[0]
	header = regexp.MustCompile(`"steps":\d+`).ReplaceAllString(header, `"steps":1`)
	for step, want := range map[string]string{
		`{"step":"client"}`:                                         "client step without a method",
		`{"step":"notify","params":{}}`:                             "notify step without a method",
		`{"step":"client","method":"m","roots":{"a":1}}`:            "roots are neither a list of URIs nor an error message",
		`{"step":"host","command":"get_selection"}`:                 "host step needs a command and an answer",
		`{"step":"host","answer":{"ok":true}}`:                      "host step needs a command and an answer",
		`{"step":"operator"}`:                                       "operator step without a command",
		`{"step":"tool","command":"byte_count"}`:                    "tool step needs a tool (command) and a JSON result",
		`{"step":"upstream","command":"echo","result":{}}`:          "upstream step needs a server",
		`{"step":"upstream","server":"s","result":{}}`:              "upstream step needs a server",
		`{"step":"upstream","server":"s","command":"echo"}`:         "upstream step needs a server",
		`{"step":"client","method":"m","params":"a","reply":"b"} x`: "line 2",
	} {
		_, err := DecodeSession(strings.NewReader(header + step + "\n"))
		var se *SessionError
		if !errors.As(err, &se) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a SessionError saying %q", step, err, want)
		}
		if se != nil && se.Line != 2 && se.Line != 0 {
			t.Errorf("%s: the error names line %d, want 2", step, se.Line)
		}
	}
}
