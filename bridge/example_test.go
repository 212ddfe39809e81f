package bridge_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/pipe"
)

// noHost is a workspace host that is not running: workspace tools answer
// PipeUnavailable, saying what to start.
type noHost struct{ *pipe.Client }

func (h noHost) Close() { h.Client.Close() }

// bridge.New wires what `tracebridge mcp` serves: the catalog, the executor,
// the gateway and the MCP server. Here an MCP client reaches it in memory;
// every call is on record in the hub's log, its result naming its request.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "tracebridge-example")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	node, err := hub.Open(ctx, hub.Options{Dir: hub.DataDir(dir + "/data"), Role: hub.Elect, Name: "example"})
	if err != nil {
		panic(err)
	}
	defer node.Close()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node})
	defer em.Close(ctx)

	b, err := bridge.New(bridge.Parts{Config: config.Default(), Emitter: em, Log: node, Logger: quiet, Version: "example",
		Host: noHost{pipe.NewClient(pipe.ClientOptions{Path: dir + "/no-host.sock", Recorder: em, Logger: quiet})}})
	if err != nil {
		panic(err)
	}
	defer b.Close()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	go b.Server.Serve(ctx, sr, sw)
	s, err := sdk.NewClient(&sdk.Implementation{Name: "example", Version: "1"}, nil).Connect(ctx, &sdk.IOTransport{Reader: cr, Writer: cw}, &sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		panic(err)
	}
	defer s.Close()

	res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "regex_text_search", Arguments: map[string]any{"pattern": "TODO", "entries": []map[string]string{{"id": "main.go", "text": "// TODO: ship"}}}})
	if err != nil {
		panic(err)
	}
	req, _ := events.ParseID(res.Meta["tracebridge/requestId"].(string))
	evs, _ := node.ByRequest(ctx, req)
	fmt.Println("isError:", res.IsError, "| first:", evs[0].Kind, "| last:", evs[len(evs)-1].Kind)

	res, _ = s.CallTool(ctx, &sdk.CallToolParams{Name: "get_selection", Arguments: map[string]any{}})
	fmt.Println("isError:", res.IsError, "|", res.StructuredContent.(map[string]any)["error"].(map[string]any)["code"])
	// Output:
	// isError: false | first: mcp.request.received | last: mcp.response.sent
	// isError: true | PipeUnavailable
}
