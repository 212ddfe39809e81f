package mcp

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/bridge/tools"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// F-PL1: calls refused before anything ran (an unknown tool) cost the log
// a bounded digest, not their arguments: 25 calls of 1 MiB record a few
// KiB each. The harmless twins: a small refused call and a call that runs
// with large arguments are recorded whole (a re-drive re-sends them).
func TestRefusedCallsRecordADigest(t *testing.T) {
	log := storetest.Open(t)
	st := log.Store
	em := events.NewEmitter(st, events.EmitterOptions{Logger: quiet, Payloads: st}) // long values kept whole, as in the bridge
	t.Cleanup(func() { em.Close(context.Background()) })
	cat, err := executor.NewCatalog(tools.Regex())
	if err != nil {
		t.Fatal(err)
	}
	srv := New(Options{Executor: executor.New(executor.Options{Catalog: cat, Emitter: em, Log: readerOf{st}, Logger: quiet}), Emitter: em, Logger: quiet})
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	go srv.Serve(context.Background(), sr, sw)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "unit", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	params := func(name string, args map[string]any) (string, events.Code) {
		t.Helper()
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		req, _ := events.ParseID(res.Meta[MetaRequestID].(string))
		evs, _ := st.ByRequest(req)
		last := evs[len(evs)-1]
		if last.Kind != events.KindMCPResponseSent {
			t.Fatalf("%s: last event %s", name, last.Kind)
		}
		p, err := events.ResolveValue(ctx, st, last.Attrs.Get("params"))
		if err != nil {
			t.Fatal(err)
		}
		return p, last.Code
	}
	if p, _ := params("no_such_tool", map[string]any{"blob": "small"}); !strings.Contains(p, `"small"`) {
		t.Fatalf("a small refused call is not recorded whole: %s", p)
	}
	big := strings.Repeat("A", 1<<20)
	total := 0
	for i := range 25 {
		p, code := params("no_such_tool", map[string]any{"blob": big, "i": i})
		if code != events.CodeUnknownTool {
			t.Fatalf("refused call %d: %s", i, code)
		}
		if len(p) > refusedKeep || !strings.Contains(p, "tracebridge/refused") || !strings.Contains(p, `"name":"no_such_tool"`) {
			t.Fatalf("refused call %d recorded %d bytes: %.200s", i, len(p), p)
		}
		total += len(p)
	}
	mid := strings.Repeat("A", 64<<10)
	if p, code := params("regex_text_search", map[string]any{"query": "zz", "text": mid}); code != "" || len(p) < len(mid) {
		t.Fatalf("a call that ran (%s) with 64 KiB of arguments recorded %d bytes of them: %.300s", code, len(p), p[len(p)-200:])
	}
	t.Logf("25 refused calls of 1 MiB recorded %d bytes of params", total)
}
