package upstream

import (
	"bufio"
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// G6: a stderr line longer than any buffer is cut and counted, and the
// lines after it are read; G5d: past the budget, lines are counted, not
// logged.
func TestStderrIsReadToTheEnd(t *testing.T) {
	var in strings.Builder
	in.WriteString("first\n")
	in.WriteString(strings.Repeat("L", 70000) + "\n")
	for range 2000 {
		in.WriteString("flood " + strings.Repeat("E", 100) + "\n")
	}
	in.WriteString("last words")
	var logged bytes.Buffer
	p := &process{}
	red := events.NewRedactor(make([]byte, 32))
	p.readStderr(strings.NewReader(in.String()), slog.New(slog.NewTextHandler(&logged, nil)), red)
	out := logged.String()
	if !strings.Contains(out, "first") || !strings.Contains(out, "line cut: 65904 more bytes") {
		t.Fatalf("the long line is not cut and counted:\n%.600s", out)
	}
	if n := strings.Count(out, "msg=\"upstream stderr\""); n != stderrBudget {
		t.Fatalf("%d lines logged, want the budget %d", n, stderrBudget)
	}
	if !strings.Contains(out, "lines=1403") {
		t.Fatalf("the lines over the budget are not counted:\n%s", out[len(out)-400:])
	}
	if !strings.Contains(p.tail(), "last words") {
		t.Fatalf("the tail misses the last line: %s", p.tail())
	}
}

func TestReadLine(t *testing.T) {
	br := bufio.NewReaderSize(strings.NewReader("abc\n"+strings.Repeat("x", 40)+"\n\nz"), 16)
	for _, want := range []struct {
		line string
		cut  int
	}{{"abc", 0}, {strings.Repeat("x", 10), 30}, {"", 0}, {"z", 0}} {
		line, cut, _ := readLine(br, 10)
		if string(line) != want.line || cut != want.cut {
			t.Fatalf("readLine: %q cut %d, want %q cut %d", line, cut, want.line, want.cut)
		}
	}
}

// F15: what a server writes on stderr once the bridge is stopping it (an
// EPIPE stack trace at every session's end) is logged at debug, not info,
// and still kept as its exit's tail.
func TestStderrWhileStoppingIsDebug(t *testing.T) {
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelDebug}))
	red := events.NewRedactor(make([]byte, 32))
	p := &process{}
	p.readStderr(strings.NewReader("running fine\n"), log, red)
	p.markStopping()
	p.readStderr(strings.NewReader("Error: write EPIPE\n    at afterWriteDispatched\n"), log, red)
	out := logged.String()
	if !strings.Contains(out, `level=INFO msg="upstream stderr" line="running fine"`) {
		t.Fatalf("a line while running is not info:\n%s", out)
	}
	if !strings.Contains(out, `level=DEBUG msg="upstream stderr" line="Error: write EPIPE" stopping=true`) || strings.Contains(out, `level=INFO msg="upstream stderr" line="Error: write EPIPE"`) {
		t.Fatalf("a line while stopping is not debug:\n%s", out)
	}
	if !strings.Contains(p.tail(), "EPIPE") {
		t.Fatalf("the tail lost it: %s", p.tail())
	}
}
