package upstream

import (
	"encoding/json"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkSDKDecodesAResult is what the go-sdk spends decoding one small
// tools/call result (its CallToolResult.UnmarshalJSON, as its client does
// for every answer): v1.8's internal decoder allocates a 32 KiB buffer per
// message, ~6 times per call through the gateway (issue 47's profile). A
// go-sdk that reuses or skips that buffer shows here first.
func BenchmarkSDKDecodesAResult(b *testing.B) {
	raw := []byte(`{"content":[{"type":"text","text":"hello"}],"isError":false}`)
	b.ReportAllocs()
	for b.Loop() {
		var res sdk.CallToolResult
		if err := json.Unmarshal(raw, &res); err != nil {
			b.Fatal(err)
		}
	}
}
