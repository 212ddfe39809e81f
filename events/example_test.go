package events_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// An Emitter is how every process records: Emit sets the id, time and
// boundary, redacts (a registered secret never reaches the log, the bus or
// a file), and batches; Flush waits until a request's events are durable.
func ExampleEmitter() {
	dir, _ := os.MkdirTemp("", "tracebridge-example")
	defer os.RemoveAll(dir)
	st, err := store.Open(filepath.Join(dir, "events.db"), store.Options{})
	if err != nil {
		panic(err)
	}
	defer st.Close()
	em := events.NewEmitter(st, events.EmitterOptions{Payloads: st})
	defer em.Close(context.Background())

	em.Redactor().Register("sk-live-0123456789")
	req := em.NewID()
	em.Emit(events.Event{Kind: events.KindToolCompleted, RequestID: req, Outcome: events.OK,
		Attrs: events.A("tool", "deploy", "answer", "used key sk-live-0123456789")})
	if err := em.Flush(context.Background(), req); err != nil {
		panic(err)
	}
	run, _ := st.ByRequest(req)
	e := run[0]
	fmt.Println(e.Kind, e.Boundary, e.Attrs.Get("tool"))
	fmt.Println("secret in the log:", strings.Contains(e.Attrs.Get("answer"), "sk-live"))
	// Output:
	// tool.completed tool deploy
	// secret in the log: false
}
