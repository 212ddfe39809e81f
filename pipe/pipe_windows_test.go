//go:build windows

package pipe

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

type recorded struct{ evs []events.Event }

func (r *recorded) Emit(e events.Event) events.ID          { r.evs = append(r.evs, e); return events.NewID() }
func (r *recorded) Flush(context.Context, events.ID) error { return nil }
func (r *recorded) NewID() events.ID                       { return events.NewID() }

// A round trip over a named pipe with the current-user DACL, and a second
// Listen on the same name refused.
func TestNamedPipeRoundTrip(t *testing.T) {
	path := fmt.Sprintf(`\\.\pipe\tracebridge-test-%d`, time.Now().UnixNano())
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if _, err := Listen(path); err == nil {
		t.Fatal("a second listener shared the pipe")
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := NewServer(ServerOptions{Recorder: &recorded{}, Logger: quiet, Handlers: map[string]Handler{
		"echo": func(_ context.Context, r Request) (any, error) { return json.RawMessage(r.Payload), nil },
	}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, l)
	c := NewClient(ClientOptions{Path: path, Recorder: &recorded{}, Logger: quiet})
	defer c.Close()
	resp, err := c.Call(context.Background(), Request{Command: "echo", OperationID: "op", Payload: json.RawMessage(`{"a":1}`)})
	if err != nil || !resp.OK || string(resp.Payload) != `{"a":1}` {
		t.Fatalf("round trip: %+v %v", resp, err)
	}
}
