package upstream

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// inMemoryUpstream is a go-sdk server with an echo tool and a tool that
// adds another (so the server says tools/list_changed), dialed in memory.
func inMemoryUpstream(t *testing.T) func(ctx context.Context, server string) (sdk.Transport, error) {
	type args struct {
		Text string `json:"text,omitempty"`
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "mem", Version: "1"}, &sdk.ServerOptions{Capabilities: &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{ListChanged: true}}})
	var added atomic.Int32
	sdk.AddTool(srv, &sdk.Tool{Name: "echo", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo " + a.Text}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "grow", Annotations: &sdk.ToolAnnotations{ReadOnlyHint: true}}, func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
		n := added.Add(1)
		sdk.AddTool(srv, &sdk.Tool{Name: fmt.Sprint("extra", n)}, func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{}, nil, nil
		})
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "grown"}}}, nil, nil
	})
	return func(ctx context.Context, _ string) (sdk.Transport, error) {
		ct, st := sdk.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, err
		}
		return ct, nil
	}
}

// Many calls at once, while the server's tool list changes under them and
// the catalog is replaced, then Close: under -race, with the real log.
func TestGatewayConcurrentCallsAndRefreshes(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: "gateway-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer em.Close(ctx)
	cfg, err := config.Parse("tb.toml", []byte("[servers.mem]\ncommand = \"unused: dialed in memory\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := executor.NewCatalog()
	var changes atomic.Int32
	g := New(Options{Config: cfg, Emitter: em, Pins: node, Catalog: cat, Logger: quiet, Dial: inMemoryUpstream(t),
		Secrets: func([]string) (map[string]string, error) { return map[string]string{}, nil },
		Changed: func() { changes.Add(1); cat.Tools() }})
	g.Ensure(ctx, events.ID{}, "tools/call")
	echo, ok := cat.Lookup("mem__echo")
	if !ok {
		t.Fatalf("mem__echo not in the catalog: %d tools", len(cat.Tools()))
	}
	grow, _ := cat.Lookup("mem__grow")
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for i := range 48 {
		wg.Go(func() {
			call := executor.Call{RequestID: em.NewID(), OperationID: em.NewID(), Args: []byte(fmt.Sprintf(`{"text":"%d"}`, i))}
			if err := echo.Admit(ctx); err != nil {
				errs <- err
				return
			}
			res, err := echo.Run(ctx, call)
			if err != nil {
				errs <- err
				return
			}
			if got := textOf(res.(*sdk.CallToolResult)); got != fmt.Sprint("echo ", i) {
				errs <- fmt.Errorf("call %d answered %q", i, got)
			}
			if i%8 == 0 {
				if _, err := grow.Run(ctx, executor.Call{RequestID: em.NewID(), OperationID: em.NewID()}); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// The catalog is replaced before Changed is called: wait for both.
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := cat.Lookup("mem__extra6"); ok && changes.Load() >= 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, ok := cat.Lookup("mem__extra6"); !ok {
		var ids []string
		for _, tl := range cat.Tools() {
			ids = append(ids, tl.ID)
		}
		t.Fatalf("tools added while calls ran are not all in the catalog: %s", strings.Join(ids, " "))
	}
	if changes.Load() < 2 {
		t.Fatalf("the catalog changed %d times", changes.Load())
	}
	g.Close()
	if _, err := echo.Run(ctx, executor.Call{RequestID: em.NewID(), OperationID: em.NewID()}); events.CodeOf(err) != events.CodeUpstreamUnavailable {
		t.Fatalf("a call after Close: %v", err)
	}
}
