package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/storetest"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type readerOf struct{ st *store.Store }

func (r readerOf) ByRequest(_ context.Context, id events.ID) ([]events.Event, error) {
	return r.st.ByRequest(id)
}

// In-process session over pipes: every tools/call result names its request,
// and the request's events (traceparent included) are durable by the time
// the client has the answer.
func TestResultsNameTheirRequestAndEvidenceIsDurableFirst(t *testing.T) {
	log := storetest.Open(t)
	st, em := log.Store, log.Emitter
	cat, err := executor.NewCatalog(tools.Regex())
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: em, Log: readerOf{st}, Logger: quiet}), Emitter: em, Logger: quiet})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background(), sr, sw) }()
	client := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool    string
		args    any
		isError bool
		last    events.Code
	}{
		{"regex_text_search", map[string]any{"query": "a", "text": "aa"}, false, ""},
		{"missing", map[string]any{}, true, events.CodeUnknownTool},
	} {
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: tc.tool, Arguments: tc.args,
			Meta: sdk.Meta{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}})
		if err != nil || res.IsError != tc.isError {
			t.Fatalf("%s: %v %+v", tc.tool, err, res)
		}
		req, err := events.ParseID(res.Meta[MetaRequestID].(string))
		if err != nil {
			t.Fatalf("%s: no request id in _meta: %v", tc.tool, res.Meta)
		}
		// No Flush here: the bridge flushed before answering.
		evs, _ := st.ByRequest(req)
		if len(evs) < 2 || evs[0].Kind != events.KindMCPRequestReceived || evs[len(evs)-1].Kind != events.KindMCPResponseSent {
			t.Fatalf("%s: events durable at answer time: %d", tc.tool, len(evs))
		}
		if last := evs[len(evs)-1]; last.Code != tc.last || last.Traceparent == "" {
			t.Fatalf("%s: response event code %q traceparent %q", tc.tool, last.Code, last.Traceparent)
		}
	}
	s.Close()
	if err := <-served; err != nil && err != io.EOF && err != context.Canceled {
		t.Logf("serve: %v", err)
	}
}

func FuzzTagResult(f *testing.F) {
	f.Add([]byte(`{"content":[],"isError":true,"structuredContent":{"error":{"code":"PolicyDenied"}}}`))
	f.Add([]byte(`{"_meta":{"x":1},"content":[]}`))
	f.Add([]byte(`[1,2]`))
	f.Add([]byte(` { "isError" : true , "_meta" : { } , "a":[{"_meta":1}], "b":"}\"," } `))
	f.Add([]byte(`{"_meta":{"tracebridge\/requestId":"spoof"},"isError":false,"isError":true}`))
	f.Add([]byte(`{}`))
	req := events.NewID()
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, isError := tagResult(json.RawMessage(raw), req)
		// The splice means what decoding and encoding again means.
		slow, slowError := tagResultDecoded(json.RawMessage(raw), req)
		var a, b any
		errA, errB := json.Unmarshal(out, &a), json.Unmarshal(slow, &b)
		if isError != slowError || (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Fatalf("%s:\nspliced %s (%v)\ndecoded %s (%v)", raw, out, isError, slow, slowError)
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil || m == nil {
			if string(out) != string(raw) {
				t.Fatal("a result that is not an object was changed")
			}
			return
		}
		var back struct {
			Meta map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(out, &back); err != nil || back.Meta[MetaRequestID] != req.String() {
			t.Fatalf("tagged result %s lacks the request id", out)
		}
		if (string(m["isError"]) == "true") != isError {
			t.Fatal("an error result was not reported as one")
		}
	})
}

// BenchmarkTagResult: the request id spliced into a result's bytes against
// decoding and encoding the result again, for a small answer and a 64 KiB
// one (go test -bench TagResult -benchmem ./bridge/mcp).
func BenchmarkTagResult(b *testing.B) {
	req := events.NewID()
	for _, size := range []int{64, 64 << 10} {
		raw := json.RawMessage(fmt.Sprintf(`{"content":[{"type":"text","text":%q}],"structuredContent":{"text":"x"}}`, strings.Repeat("a", size)))
		for _, how := range []struct {
			name string
			tag  func(json.RawMessage, events.ID) (json.RawMessage, bool)
		}{{"spliced", tagResult}, {"decoded", tagResultDecoded}} {
			b.Run(fmt.Sprintf("text=%dB/%s", size, how.name), func(b *testing.B) {
				b.SetBytes(int64(len(raw)))
				for b.Loop() {
					how.tag(raw, req)
				}
			})
		}
	}
}

// A session that ends leaves nothing behind in the server: the HTTP front
// door's sessionless path (protocol 2026-07-28) is one session per request,
// and each one kept used to hold its 4 MiB line buffer for ever.
func TestEndedSessionsAreForgotten(t *testing.T) {
	log := storetest.Open(t)
	cat, err := executor.NewCatalog(tools.Regex())
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: log.Emitter, Log: readerOf{log.Store}, Logger: quiet}), Emitter: log.Emitter, Logger: quiet})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for range 3 {
		cr, sw := io.Pipe()
		sr, cw := io.Pipe()
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ctx, sr, sw) }()
		client := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, nil)
		s, err := client.Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "regex_text_search", Arguments: map[string]any{"query": "a", "text": "a"}}); err != nil || res.IsError {
			t.Fatal(err, res)
		}
		s.Close()
		<-served
	}
	kept := 0
	for range srv.roots.Range {
		kept++
	}
	srv.clients.Range(func(any, any) bool { kept++; return true })
	if kept != 0 {
		t.Fatalf("%d entries of ended sessions are kept", kept)
	}
}
