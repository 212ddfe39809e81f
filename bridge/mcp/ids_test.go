package mcp

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/storetest"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// rawSession serves a bridge whose "hold" tool waits for release, and
// speaks raw lines to it.
type rawSession struct {
	st      *store.Store
	in      *io.PipeWriter
	out     *bufio.Scanner
	release chan struct{}
	served  chan error
}

func newRawSession(t *testing.T) *rawSession {
	log := storetest.Open(t)
	st, em := log.Store, log.Emitter
	r := &rawSession{st: st, release: make(chan struct{}), served: make(chan error, 1)}
	hold := &executor.Tool{Descriptor: executor.Descriptor{ID: "hold", Name: "hold", Description: "waits", Category: "test",
		Source: "builtin", Capabilities: []string{config.CapTextSearch}, Approval: "never"},
		InputSchema: &jsonschema.Schema{Type: "object"},
		Run: func(ctx context.Context, c executor.Call) (any, error) {
			select {
			case <-r.release:
			case <-ctx.Done():
			}
			return map[string]string{"args": string(c.Args)}, nil
		}}
	cat, err := executor.NewCatalog(hold)
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: em, Log: readerOf{st}, Logger: quiet}), Emitter: em, Logger: quiet})
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	go func() { r.served <- srv.Serve(context.Background(), sr, sw) }()
	r.in, r.out = cw, bufio.NewScanner(cr)
	t.Cleanup(func() { cw.Close(); <-r.served })
	r.send(t, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	r.recv(t)
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

func (r *rawSession) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (r *rawSession) recv(t *testing.T) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		if r.out.Scan() {
			got <- r.out.Text()
		} else {
			got <- "EOF"
		}
	}()
	select {
	case l := <-got:
		return l
	case <-time.After(20 * time.Second):
		t.Fatal("no answer")
		return ""
	}
}

// Two tools/call in flight with "id":5: the second is refused with a
// JSON-RPC error and recorded; the first gets its own result; the log
// says exactly that.
func TestDuplicateInFlightIDIsRefused(t *testing.T) {
	r := newRawSession(t)
	r.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold","arguments":{"n":"first"}}}`)
	r.send(t, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"hold","arguments":{"n":"second"}}}`)
	refused := r.recv(t)
	if !strings.Contains(refused, `"id":5`) || !strings.Contains(refused, `-32600`) || !strings.Contains(refused, "already in flight") {
		t.Fatalf("the duplicate: %s", refused)
	}
	close(r.release)
	first := r.recv(t)
	if !strings.Contains(first, `"id":5`) || !strings.Contains(first, `first`) || strings.Contains(first, "second") {
		t.Fatalf("the first call's answer: %s", first)
	}
	var resp struct {
		Result struct {
			Meta map[string]string `json:"_meta"`
		} `json:"result"`
	}
	json.Unmarshal([]byte(first), &resp)
	evs, _ := r.st.Range(1, 10000)
	var calls, refusals int
	for _, e := range evs {
		if e.Kind == events.KindMCPRequestReceived && e.Attrs.Get("method") == "tools/call" {
			calls++
			if e.Code == events.CodeInvalidRequest {
				refusals++
			}
		}
		if e.Kind == events.KindToolStarted && e.RequestID.String() != resp.Result.Meta[MetaRequestID] {
			t.Errorf("a tool ran under another request than the answer names")
		}
	}
	if calls != 2 || refusals != 1 {
		t.Errorf("recorded %d calls, %d refused; want 2 and 1", calls, refusals)
	}
}

// Ids the SDK cannot echo exactly are refused with the id as sent; ids it
// can are echoed exactly; a line that is not JSON ends the session at once.
func TestOddIDsAreEchoedExactlyOrRefused(t *testing.T) {
	r := newRawSession(t)
	for _, tc := range []struct{ id, want string }{
		{`1.5`, `"id":1.5,"error":{"code":-32600`},
		{`9007199254740993`, `"id":9007199254740993,"error":{"code":-32600`},
		{`18446744073709551617`, `"id":18446744073709551617,"error":{"code":-32600`},
		{`-18446744073709551617`, `"id":-18446744073709551617,"error":{"code":-32600`},
		{`1e3`, `"id":1e3,"error":{"code":-32600`},
		{`null`, `"id":null,"error":{"code":-32600`},
		{`9007199254740992`, `"id":9007199254740992,"result"`},
		{`-7`, `"id":-7,"result"`},
		{`"a\"b"`, `"id":"a\"b","result"`},
	} {
		r.send(t, `{"jsonrpc":"2.0","id":`+tc.id+`,"method":"ping"}`)
		if got := r.recv(t); !strings.Contains(got, tc.want) {
			t.Errorf("id %s: got %s, want %s", tc.id, got, tc.want)
		}
	}
	// A frame without its closing brace is answered now, not when the next
	// line arrives: the session ends, recorded as MalformedFrame.
	r.send(t, `{"jsonrpc":"2.0","id":9,"method":"ping"`)
	select {
	case <-r.served:
	case <-time.After(10 * time.Second):
		t.Fatal("an unterminated frame left the session waiting for the next line")
	}
	r.served <- nil // for the cleanup
	evs, _ := r.st.Range(1, 10000)
	if last := evs[len(evs)-1]; last.Kind != events.KindMCPSessionAborted || last.Code != events.CodeMalformedFrame {
		t.Errorf("last event %s %s, want mcp.session.aborted MalformedFrame", last.Kind, last.Code)
	}
}

// FuzzLineGuard: whatever arrives, the guard hands the SDK only complete
// JSON lines, refuses with ids that are valid JSON, and never panics.
func FuzzLineGuard(f *testing.F) {
	for _, s := range []string{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}` + "\n", `{"id":null,"method":"x"}` + "\n", "{\n", `[1,2]` + "\n", `{"id":"x","method":1}`, "\n\n \n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		g := newLineGuard(strings.NewReader(string(in)), 1<<10, lineBuffer, func(id json.RawMessage, method, msg string) {
			if !json.Valid(id) {
				t.Fatalf("refused with an invalid id %q", id)
			}
		})
		out, _ := io.ReadAll(g)
		for _, l := range strings.Split(string(out), "\n") {
			if strings.TrimSpace(l) != "" && !json.Valid([]byte(l)) {
				t.Fatalf("passed on a line that is not JSON: %q", l)
			}
		}
	})
}

// A client that writes its requests and closes stdin at once still gets
// every answer before the session ends.
func TestClosedStdinStillAnswersWhatWasRead(t *testing.T) {
	log := storetest.Open(t)
	st, em := log.Store, log.Emitter
	cat, _ := executor.NewCatalog(tools.Regex())
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: em, Log: readerOf{st}, Logger: quiet}), Emitter: em, Logger: quiet})
	in := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}` + "\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"regex_text_search","arguments":{"query":"a","text":"aa"}}}` + "\n")
	var out strings.Builder
	if err := srv.Serve(context.Background(), io.NopCloser(in), nopWriteCloser{&out}); err != nil && !errors.Is(err, io.EOF) {
		t.Fatalf("serve: %v", err)
	}
	for _, id := range []string{`"id":1,`, `"id":2,`, `"id":3,`} {
		if !strings.Contains(out.String(), id) {
			t.Errorf("no answer with %s after stdin closed:\n%s", id, out.String())
		}
	}
	evs, _ := st.Range(1, 1000)
	sent := 0
	for _, e := range evs {
		if e.Kind == events.KindMCPResponseSent {
			sent++
		}
	}
	if sent != 3 {
		t.Errorf("%d mcp.response.sent events durable, want 3", sent)
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Lines longer than the guard's reading buffer are gathered whole, up to
// the maximum: one of exactly the maximum passes, one byte more ends the
// session as too long.
func TestLineGuardGathersLongLinesUpToTheMaximum(t *testing.T) {
	const max = 3*lineBuffer + 17
	line := func(n int) string { // a JSON string line of n bytes, newline not counted
		return `"` + strings.Repeat("a", n-2) + `"` + "\n"
	}
	for _, tc := range []struct {
		n    int
		pass bool
	}{{100, true}, {lineBuffer, true}, {lineBuffer + 1, true}, {max, true}, {max + 1, false}, {max + lineBuffer, false}} {
		g := newLineGuard(strings.NewReader(line(tc.n)+line(10)), max, lineBuffer, func(json.RawMessage, string, string) {})
		out, err := io.ReadAll(g)
		switch {
		case tc.pass && (err != nil || string(out) != line(tc.n)+line(10)):
			t.Errorf("a %d-byte line: %d bytes out, %v", tc.n, len(out), err)
		case !tc.pass && (!errors.Is(err, errLineTooLong) || len(out) != 0):
			t.Errorf("a %d-byte line past the %d maximum: %d bytes out, %v", tc.n, max, len(out), err)
		}
	}
}
