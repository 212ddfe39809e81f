package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	bmcp "github.com/tracebridge/tracebridge/bridge/mcp"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// mcpChild is a real `tracebridge mcp` child driven by the SDK client.
type mcpChild struct {
	session *sdk.ClientSession
	stderr  *testenv.Buffer
	data    string
}

// startBridge launches bin as an MCP server on data with extra environment
// and connects with protocol version proto ("" for the SDK's newest).
func startBridge(t *testing.T, bin, data, proto string, env ...string) *mcpChild {
	t.Helper()
	return startBridgeWith(t, bin, data, proto, nil, env...)
}

// call calls a tool and returns the result, its request id and its error
// code ("" on success).
func (b *mcpChild) call(t *testing.T, tool string, args any) (*sdk.CallToolResult, events.ID, events.Code) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := b.session.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: protocol error %v\nstderr:\n%s", tool, err, b.stderr)
	}
	idText, _ := res.Meta[bmcp.MetaRequestID].(string)
	id, err := events.ParseID(idText)
	if err != nil {
		t.Fatalf("call %s: result _meta lacks %s: %v", tool, bmcp.MetaRequestID, res.Meta)
	}
	code := codeOf(res)
	if res.IsError && code == "" {
		code = "untyped:" + events.Code(textOf(res))
	}
	return res, id, code
}

// codeOf is a tool result's error code ("" on success), from
// _meta["tracebridge/error"], where every client finds it.
func codeOf(res *sdk.CallToolResult) events.Code {
	if !res.IsError {
		return ""
	}
	var e struct {
		Code events.Code `json:"code"`
	}
	raw, _ := json.Marshal(res.Meta["tracebridge/error"])
	json.Unmarshal(raw, &e)
	return e.Code
}

func textOf(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// close ends the session (stdin closes) and waits for the bridge to exit.
func (b *mcpChild) close(t *testing.T) {
	t.Helper()
	if err := b.session.Close(); err != nil && !strings.Contains(err.Error(), "signal") {
		t.Logf("close: %v", err)
	}
}

// requestEvents opens the (closed) store and returns one request's events.
func requestEvents(t *testing.T, data string, req events.ID) []events.Event {
	t.Helper()
	st := readStore(t, data)
	defer st.Close() // now: callers (the crash loop) start the next process on this store
	evs, err := st.ByRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

func kindsOf(evs []events.Event) []string { return storetest.Kinds(evs) }

func hasKind(evs []events.Event, kind string, code events.Code) bool {
	for _, e := range evs {
		if e.Kind == kind && e.Code == code {
			return true
		}
	}
	return false
}

// requestEventsLive reads one request's events from a running bridge's
// data dir (`replay --format json` attaches to its hub).
func requestEventsLive(t *testing.T, b *mcpChild, req events.ID) []events.Event {
	t.Helper()
	out, err := exec.Command(tbBin, "--data", b.data, "replay", req.String(), "--format", "json").Output()
	if err != nil {
		t.Fatalf("replay %s: %v", req, err)
	}
	var run struct{ Events []events.Event }
	if err := json.Unmarshal(out, &run); err != nil {
		t.Fatalf("replay %s: %v", req, err)
	}
	return run.Events
}
