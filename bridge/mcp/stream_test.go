package mcp

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// A stream's log replays what follows a Last-Event-ID, stops where its
// client is asked to come back, and a newer writer takes it over.
func TestStreamLogResumes(t *testing.T) {
	l := newSSELog(3, []byte("7"))
	done := make(chan struct{})
	first := l.attach()
	l.add([]byte(`{"method":"notifications/progress"}`), false)
	l.poll(events.ID{}, 2*time.Second)
	var a bytes.Buffer
	if end := l.follow(context.Background(), &a, 0, first, done); end != followPolled {
		t.Fatalf("first writer ended %v, want followPolled", end)
	}
	if !strings.Contains(a.String(), "id: 3_1\n") || !strings.HasSuffix(a.String(), "retry: 2000\n\n") || strings.Contains(a.String(), "3_2") {
		t.Errorf("first writer wrote %q", a.String())
	}
	l.add([]byte(`{"id":7,"result":{}}`), true)
	second := l.attach()
	if l.attach(); l.follow(context.Background(), &a, 1, second, done) != followGone {
		t.Error("a writer taken over did not stop")
	}
	third := l.writers
	var b bytes.Buffer
	if end := l.follow(context.Background(), &b, 1, third, done); end != followAnswered {
		t.Fatalf("resumed writer ended %v", end)
	}
	if b.String() != "id: 3_2\nevent: message\ndata: {\"id\":7,\"result\":{}}\n\n" {
		t.Errorf("resumed after 3_1: %q", b.String())
	}
	var c bytes.Buffer
	if end := l.follow(context.Background(), &c, 2, third, done); end != followNothing || c.Len() != 0 {
		t.Errorf("resumed after the answer: %v %q", end, c.String())
	}
}

// Notifications past logCap are dropped; the answer never is.
func TestStreamLogKeepsItsAnswer(t *testing.T) {
	l := newSSELog(1, []byte("1"))
	big := bytes.Repeat([]byte("x"), logCap/2+1)
	l.add(big, false)
	l.add(big, false)
	l.add(big, true)
	if len(l.events) != 2 || !l.answered {
		t.Errorf("kept %d events, answered %v", len(l.events), l.answered)
	}
}

func FuzzEventID(f *testing.F) {
	f.Add("1_0")
	f.Add("12_-1")
	f.Add("_")
	f.Fuzz(func(t *testing.T, s string) {
		n, i, ok := parseEventID(s)
		if ok && (n <= 0 || i < 0) {
			t.Fatalf("%q read as %d_%d", s, n, i)
		}
		if ok {
			if n2, i2, ok2 := parseEventID(fmt.Sprintf("%d_%d", n, i)); !ok2 || n2 != n || i2 != i {
				t.Fatalf("%d_%d does not read back", n, i)
			}
		}
	})
}
