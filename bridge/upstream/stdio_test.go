package upstream

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
)

// TestMain lets this test binary be a stdio MCP server: a real child
// process the gateway starts, speaks to over its pipes, and sees exit.
func TestMain(m *testing.M) {
	switch os.Getenv("TB_UPSTREAM_CHILD") {
	case "1":
		serveChild()
		return
	case "raw":
		serveRaw()
		return
	}
	os.Exit(m.Run())
}

// serveChild is the child: echo answers with what it was given and the
// secret it inherited; crash exits at once, with a last word on stderr.
func serveChild() {
	type args struct {
		Text string `json:"text,omitempty"`
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "child", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("echo %s key=%s home=%s aws=%s", a.Text, os.Getenv("CHILD_KEY"), os.Getenv("HOME"), os.Getenv("AWS_SECRET_ACCESS_KEY"))}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "crash"}, func(context.Context, *sdk.CallToolRequest, args) (*sdk.CallToolResult, any, error) {
		fmt.Fprintln(os.Stderr, "child: crashing on purpose")
		os.Exit(3)
		return nil, nil, nil
	})
	srv.Run(context.Background(), &sdk.StdioTransport{})
}

// rawResult is the raw child's tools/call result: its keys in its own
// order and a field no MCP SDK knows.
const rawResult = `{"isError":false,"content":[{"text":"as sent","type":"text"}],"x-vendor":{"kept":true}}`

// serveRaw is a child that writes its JSON-RPC by hand.
func serveRaw() {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || len(m.ID) == 0 {
			continue
		}
		result := map[string]string{
			"initialize": `{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"raw","version":"1"}}`,
			"tools/list": `{"tools":[{"name":"echo","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}}]}`,
			"tools/call": rawResult,
		}[m.Method]
		if result == "" {
			result = "{}"
		}
		fmt.Printf(`{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", m.ID, result)
	}
}

// A tools/call's answer is recorded as the server sent it: its key order and
// a field the SDK drops are in upstream.response.received.
func TestTheAnswerIsRecordedAsSent(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: "raw-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer em.Close(ctx)
	cfg, err := config.Parse("tb.toml", []byte(fmt.Sprintf("[servers.raw]\ncommand = %q\nargs = [\"-test.run\", \"^$\"]\nenv = { TB_UPSTREAM_CHILD = \"raw\" }\n", os.Args[0])))
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := executor.NewCatalog()
	g := New(Options{Config: cfg, Emitter: em, Pins: node, Catalog: cat, Logger: quiet,
		Secrets: func([]string) (map[string]string, error) { return nil, nil }})
	defer g.Close()
	g.Ensure(ctx, events.ID{}, "tools/list")
	var req events.ID
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // pinned once the listing is on the log
		tl, ok := cat.Lookup("raw__echo")
		if ok && tl.Admit(ctx) == nil {
			req = em.NewID()
			if _, err = tl.Run(ctx, executor.Call{RequestID: req, OperationID: em.NewID(), Args: []byte(`{}`)}); err == nil {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("raw__echo: %v", err)
		}
	}
	em.FlushAll(ctx)
	evs, _ := node.ByRequest(ctx, req)
	for _, e := range evs {
		if e.Kind == events.KindUpstreamResponse {
			if got := e.Attrs.Get(AttrAnswer); got != rawResult {
				t.Fatalf("recorded answer %s, sent %s", got, rawResult)
			}
			return
		}
	}
	t.Fatalf("no upstream.response.received among %d events", len(evs))
}

// A stdio upstream is a real child process: started with only the base
// environment and its own env (a secret resolved into it), its tools
// called over its pipes, its crash recorded with its exit code and last
// stderr line and answered UpstreamUnavailable, and started again on the
// next call.
func TestStdioUpstreamIsARealChild(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Logger: quiet, Name: "stdio-test"})
	em := events.NewEmitter(node, events.EmitterOptions{Logger: quiet})
	defer em.Close(ctx)
	cfg, err := config.Parse("tb.toml", []byte(fmt.Sprintf(`
[secrets.K]
env = "TB_TEST_K"
[servers.child]
command = %q
args = ["-test.run", "^$"]
env = { TB_UPSTREAM_CHILD = "1", CHILD_KEY = "${secret:K}" }
`, os.Args[0])))
	if err != nil {
		t.Fatal(err)
	}
	cat, _ := executor.NewCatalog()
	g := New(Options{Config: cfg, Emitter: em, Pins: node, Catalog: cat, Logger: quiet,
		Getenv: func(k string) string {
			return map[string]string{"HOME": "/home/op", "AWS_SECRET_ACCESS_KEY": "not-for-children"}[k]
		},
		Secrets: func([]string) (map[string]string, error) { return map[string]string{"K": "resolved-123"}, nil }})
	defer g.Close()
	g.Ensure(ctx, events.ID{}, "tools/list")
	run := func(tool string) (string, events.ID, error) {
		tl, ok := cat.Lookup("child__" + tool)
		if !ok {
			t.Fatalf("child__%s is not in the catalog", tool)
		}
		req := em.NewID()
		if err := tl.Admit(ctx); err != nil {
			return "", req, err
		}
		res, err := tl.Run(ctx, executor.Call{RequestID: req, OperationID: em.NewID(), Args: []byte(`{"text":"hi"}`)})
		if err != nil {
			return "", req, err
		}
		return textOf(res.(*sdk.CallToolResult)), req, nil
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) { // pinned once the first listing is on the log
		if _, _, err := run("echo"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	out, _, err := run("echo")
	if err != nil || out != "echo hi key=resolved-123 home=/home/op aws=" {
		t.Fatalf("echo through the child: %q %v", out, err)
	}
	if _, _, err := run("crash"); events.CodeOf(err) == "" {
		t.Fatalf("a crashing child answered: %v", err)
	}
	em.FlushAll(ctx)
	var exited *events.Event
	for deadline := time.Now().Add(10 * time.Second); exited == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		em.FlushAll(ctx)
		all, _, _ := node.Range(ctx, 1, 10000)
		for i := range all {
			if all[i].Kind == events.KindUpstreamExited {
				exited = &all[i]
			}
		}
	}
	if exited == nil || exited.Code != events.CodeUpstreamUnavailable || !strings.Contains(exited.Attrs.Get("stderr"), "crashing on purpose") || exited.Attrs.Get("exitCode") != "3" {
		t.Fatalf("the crash is not on the log as it happened: %+v", exited)
	}
	// Every spawn is evidence: what ran (resolved, hashed), the names of
	// its environment and never a value, who ran it, its confinement.
	all, _, _ := node.Range(ctx, 1, 10000)
	self, _ := os.ReadFile(os.Args[0])
	want := sha256.Sum256(self)
	for _, e := range all {
		if e.Kind != events.KindUpstreamStarted {
			continue
		}
		a := e.Attrs
		if a.Get("executable") == "" || a.Get("executableSha256") != hex.EncodeToString(want[:]) || a.Get("uid") != fmt.Sprint(os.Getuid()) ||
			!strings.HasPrefix(a.Get("sandbox"), "landlock v") || !strings.Contains(a.Get("env"), "CHILD_KEY") || strings.Contains(fmt.Sprint(a), "resolved-123") {
			t.Fatalf("upstream.started does not say what ran: %v", a)
		}
	}
	var again string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if again, _, err = run("echo"); err == nil {
			break
		}
	}
	if err != nil || !strings.HasPrefix(again, "echo hi") {
		t.Fatalf("after the crash the next call did not start the child again: %q %v", again, err)
	}
}
