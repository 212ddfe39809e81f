package loopback

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

// serve answers "ok" on a SameUser listener and returns its address and
// the refusals recorded.
func serve(t *testing.T, network, addr string) (string, func() []events.Event) {
	t.Helper()
	l, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []events.Event
	ref := NewRefusals("test.rejected", nil, func(e events.Event) events.ID {
		mu.Lock()
		got = append(got, e)
		mu.Unlock()
		return events.ID{}
	})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, "ok") })}
	go srv.Serve(SameUser(l, ref.ForeignPeer, nil))
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return l.Addr().String(), func() []events.Event { mu.Lock(); defer mu.Unlock(); return append([]events.Event(nil), got...) }
}

// This user's connections pass, over IPv4 and IPv6 loopback: the peer's
// uid is found in /proc/net/tcp{,6}.
func TestSameUserLetsThisUserIn(t *testing.T) {
	for _, a := range []string{"127.0.0.1:0", "[::1]:0"} {
		network := "tcp4"
		if strings.HasPrefix(a, "[") {
			network = "tcp6"
		}
		addr, refused := serve(t, network, a)
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			if network == "tcp6" && strings.Contains(err.Error(), "cannot assign") {
				continue // no IPv6 loopback on this machine
			}
			t.Fatalf("%s: %v (refused: %v)", a, err, refused())
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || len(refused()) != 0 {
			t.Fatalf("%s: %d, refusals %v", a, resp.StatusCode, refused())
		}
	}
}

// Every refusal is counted: past PerCode distinct ones, the rest are
// recorded as one event with the count when the window closes (H7).
func TestRefusalsCountWhatTheyDoNotRecord(t *testing.T) {
	var got []events.Event
	now := time.Unix(1000, 0)
	r := NewRefusals("test.rejected", func() time.Time { return now }, func(e events.Event) events.ID { got = append(got, e); return events.ID{} })
	for i := range PerCode + 50 {
		r.Record(events.CodeUnauthenticated, fmt.Sprint(i), map[string]string{"path": "/x"})
	}
	for range 30 {
		r.Record(events.CodeUnauthenticated, "0", map[string]string{"path": "/x"}) // repeats
	}
	if len(got) != PerCode {
		t.Fatalf("%d events recorded one by one, want %d", len(got), PerCode)
	}
	now = now.Add(Window)
	r.Record(events.CodeForeignHost, "h", map[string]string{"host": "evil"}) // a new window flushes the last
	if len(got) != PerCode+2 || got[PerCode].Attrs.Get("count") != "80" {
		t.Fatalf("after the window: %d events, the aggregate says count %q, want 80", len(got), got[PerCode].Attrs.Get("count"))
	}
}
