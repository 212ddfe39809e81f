package lineconn

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An SDK client and server reach each other over two of these as over the
// SDK's own transport.
func TestSDKClientAndServerTalkOverIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	srv := sdk.NewServer(&sdk.Implementation{Name: "s", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: a.Text}}}, nil, nil
	})
	go srv.Run(ctx, &Transport{Reader: sr, Writer: sw, MaxFrame: 1 << 20})
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx, &Transport{Reader: cr, Writer: cw, MaxFrame: 1 << 20}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, text := range []string{"one", "two", strings.Repeat("x", 100<<10)} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: map[string]any{"text": text}})
		if err != nil {
			t.Fatal(err)
		}
		if got := res.Content[0].(*sdk.TextContent).Text; got != text {
			t.Fatalf("echo answered %d bytes, want %d", len(got), len(text))
		}
	}
}

// read is what one Read of conn over input returns.
func readOne(t *testing.T, input string, maxFrame int) (jsonrpc.Message, error) {
	t.Helper()
	c := open(io.NopCloser(strings.NewReader(input)), maxFrame)
	defer c.Close()
	return c.Read(context.Background())
}

// open connects over r, as the transport does.
func open(r io.ReadCloser, maxFrame int) *Conn {
	c, _ := (&Transport{Reader: r, Writer: nopWriter{}, MaxFrame: maxFrame}).Connect(context.Background())
	return c.(*Conn)
}

type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
func (nopWriter) Close() error                { return nil }

func TestFramesOverTheCapTrailingDataAndGarbageEndTheConnection(t *testing.T) {
	ok := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	if _, err := readOne(t, ok, 64); err != nil {
		t.Fatalf("a message under the cap: %v", err)
	}
	if _, err := readOne(t, ok, 16); !errors.Is(err, ErrFrameTooLarge) {
		t.Fatalf("a message over the cap: %v, want ErrFrameTooLarge", err)
	}
	if _, err := readOne(t, `{"jsonrpc":"2.0","id":1,"method":"ping"} {}`+"\n", 0); err == nil || !strings.Contains(err.Error(), "trailing data") {
		t.Fatalf("data after a message on its line: %v", err)
	}
	if _, err := readOne(t, "hello\n", 0); err == nil {
		t.Fatal("garbage was read as a message")
	}
	if _, err := readOne(t, "", 0); !errors.Is(err, io.EOF) {
		t.Fatalf("an empty stream: %v, want EOF", err)
	}
	// The cap is per message: many messages, each under it, pass.
	c := open(io.NopCloser(strings.NewReader(strings.Repeat(ok, 100))), len(ok)+1)
	defer c.Close()
	for i := range 100 {
		if _, err := c.Read(context.Background()); err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
	}
}

func TestCloseAndContextEndARead(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	c := open(r, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.Read(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled read: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, err := c.Read(context.Background()); done <- err }()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case err := <-done:
		if !errors.Is(err, io.EOF) {
			t.Fatalf("a read ended by Close: %v, want EOF", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end a blocked Read")
	}
}

// A 2025-03-26 client's batch is its messages in order, where batches are
// taken; elsewhere it ends the connection.
func TestBatchesAreTheirMessagesWhereTaken(t *testing.T) {
	batch := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","method":"b"}]` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"c"}` + "\n"
	conn, _ := (&Transport{Reader: io.NopCloser(strings.NewReader(batch)), Writer: nopWriter{}, Batches: true}).Connect(context.Background())
	defer conn.Close()
	var got []string
	for range 3 {
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.(*jsonrpc.Request).Method)
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Fatalf("read %v, want a, b, c", got)
	}
	for _, bad := range []string{"[]\n", `[{"jsonrpc":"2.0","id":1,"method":"a"},7]` + "\n"} {
		conn, _ := (&Transport{Reader: io.NopCloser(strings.NewReader(bad)), Writer: nopWriter{}, Batches: true}).Connect(context.Background())
		if _, err := conn.Read(context.Background()); err == nil {
			t.Fatalf("%q was read", bad)
		}
		conn.Close()
	}
	if _, err := readOne(t, batch, 0); err == nil {
		t.Fatal("a batch was read where batches are not taken")
	}
}
