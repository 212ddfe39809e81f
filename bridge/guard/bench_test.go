package guard_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/events"
)

// The guard's cost on a result grows with its size (1 KiB, 64 KiB, 1 MiB
// of prose-like text with a structured copy), and on a no-op call's
// arguments.
func BenchmarkResult(b *testing.B) {
	red := events.NewRedactor([]byte("bench-key-0123456789abcdef012345"))
	red.Register("configured-secret-value-123")
	line := "The build of module tracebridge finished in 12.5 s; 3 packages changed, see the log for details.\n"
	for _, size := range []int{1 << 10, 64 << 10, 1 << 20} {
		text := strings.Repeat(line, size/len(line)+1)[:size]
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: text}}, StructuredContent: map[string]any{"text": "ok", "n": 3}}
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				if j := guard.Result("s", res, red, guard.Default, nil); len(j.Findings) != 0 {
					b.Fatal(j.Findings)
				}
			}
		})
	}
	b.Run("noop", func(b *testing.B) {
		res := &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: `{"text":"x"}`}}, StructuredContent: map[string]any{"text": "x"}}
		for b.Loop() {
			guard.Result("s", res, red, guard.Default, nil)
		}
	})
}

func BenchmarkArgs(b *testing.B) {
	c := guard.Call{Server: "noop", Tool: "echo", Description: "answers with its text", Schema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`),
		Args: json.RawMessage(`{"text":"x"}`)}
	for b.Loop() {
		if fs := guard.Args(c, guard.Default); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
