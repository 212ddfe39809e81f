package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host/lsp"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// The symbol whose references the language benchmark asks for: NewID, used
// all over this module (events/ids.go line 59: "func NewID() ID").
const benchFile, benchLine, benchCol = "events/ids.go", 59, 6

// BenchmarkFindReferences is find_references on this module's own NewID,
// through the whole path (go-sdk client → tracebridge mcp → host → gopls,
// every crossing recorded) and from gopls directly (the same LSP request
// from a plain client, no tracebridge), in the same run. cold-ms is the
// first answer after the language server started (process start, module
// load, the answer); the loop is warm (after 20 more answers).
func BenchmarkFindReferences(b *testing.B) {
	gopls := testenv.Gopls(b)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("path=gopls-direct", func(b *testing.B) {
		srv := lsp.NewServer(lsp.Config{Language: "go", Command: []string{gopls}, Root: root, Timeout: 2 * time.Minute}, nil)
		defer srv.Close()
		abs := filepath.Join(root, benchFile)
		text, err := os.ReadFile(abs)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		params := map[string]any{"textDocument": map[string]string{"uri": lsp.URI(abs)}, "position": map[string]int{"line": benchLine - 1, "character": benchCol - 1},
			"context": map[string]bool{"includeDeclaration": true}} // as find_references asks
		ask := func() int {
			var locs []json.RawMessage
			if err := srv.Call(ctx, events.ID{}, "textDocument/references", params, &locs); err != nil {
				b.Fatal(err)
			}
			return len(locs)
		}
		t0 := time.Now()
		if err := srv.Open(ctx, events.ID{}, abs, "go", string(text)); err != nil {
			b.Fatal(err)
		}
		coldThenWarm(b, t0, ask)
	})
	b.Run("path=tracebridge", func(b *testing.B) {
		data := filepath.Join(b.TempDir(), "data")
		cfg := filepath.Join(b.TempDir(), "tracebridge.toml")
		os.WriteFile(cfg, fmt.Appendf(nil, "[lsp.go]\ncommand = [%q]\ntimeout = \"2m\"\n", gopls), 0o600)
		start(b, tbBin, data, "host", "--root", root, "--config", cfg)
		eventually(b, 10*time.Second, "the host socket", func() bool {
			_, err := os.Stat(filepath.Join(data, "run", "host.sock"))
			return err == nil
		})
		s := connectCmd(b, bridgeCmd(data))
		defer s.Close()
		ctx := context.Background()
		ask := func() int {
			res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "find_references", Arguments: map[string]any{"path": benchFile, "line": benchLine, "column": benchCol}})
			if err != nil || res.IsError {
				b.Fatal(err, textOf(res))
			}
			var out struct {
				Count int `json:"count"`
			}
			json.Unmarshal([]byte(textOf(res)), &out)
			return out.Count
		}
		t0 := time.Now() // the host starts gopls on this first request
		coldThenWarm(b, t0, ask)
	})
}

// coldThenWarm reports the first answer's time since t0 (cold-ms), then, past
// 20 more answers, the loop's p50 and p99 (warm).
func coldThenWarm(b *testing.B, t0 time.Time, ask func() int) {
	n, cold := ask(), time.Since(t0)
	for range 20 { // past the load's background work: warm
		ask()
	}
	var lat []time.Duration
	for b.Loop() {
		t0 := time.Now()
		ask()
		lat = append(lat, time.Since(t0))
	}
	reportLatency(b, lat) // after the loop: b.Loop's start clears metrics
	b.ReportMetric(float64(cold.Milliseconds()), "cold-ms")
	b.ReportMetric(float64(n), "refs")
}
