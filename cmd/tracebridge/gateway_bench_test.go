package main

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// faultServerCmd is this test binary as a go-sdk MCP server (its "ok" tool
// is the no-op the gateway benchmarks call).
func faultServerCmd() *exec.Cmd {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "TB_FAULT_UPSTREAM=1")
	return cmd
}

// gatewayConfig writes a config with the given servers, each this test
// binary's MCP server.
func gatewayConfig(b testing.TB, names ...string) string {
	var sb strings.Builder
	for _, n := range names {
		fmt.Fprintf(&sb, "[servers.%s]\ncommand = %q\nenv = { TB_FAULT_UPSTREAM = \"1\" }\n\n", n, os.Args[0])
	}
	p := filepath.Join(b.TempDir(), "tracebridge.toml")
	os.WriteFile(p, []byte(sb.String()), 0o600)
	return p
}

// BenchmarkGateway is a no-op upstream tool called directly by a go-sdk
// client and through tracebridge (stdio and --http), one call at a time and
// 16 at once, with the durable flush of one event and a built-in no-op tool
// measured in the same run as the references for the added latency.
func BenchmarkGateway(b *testing.B) {
	b.Run("path=flush", func(b *testing.B) {
		ctx := context.Background()
		node, err := hub.Open(ctx, hub.Options{Dir: hub.DataDir(filepath.Join(b.TempDir(), "data")), Role: hub.Elect, Name: "bench"})
		if err != nil {
			b.Fatal(err)
		}
		defer node.Close()
		em := events.NewEmitter(node, events.EmitterOptions{})
		defer em.Close(ctx)
		var lat []time.Duration
		for b.Loop() {
			req := em.NewID()
			t0 := time.Now()
			em.Emit(events.Event{Kind: events.KindOperatorAction, RequestID: req, Outcome: events.OK})
			if err := em.Flush(ctx, req); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		reportLatency(b, lat)
	})
	for _, path := range []string{"direct", "builtin-stdio", "tracebridge-stdio", "tracebridge-http"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("path=%s/clients=%d", path, conc), func(b *testing.B) {
				s, tool := gatewaySession(b, path)
				defer s.Close()
				var mu sync.Mutex
				var lat []time.Duration
				work := make(chan struct{})
				var wg sync.WaitGroup
				for range conc {
					wg.Go(func() {
						for range work {
							t0 := time.Now()
							res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{"text": "x"}})
							d := time.Since(t0)
							if err != nil || res.IsError {
								b.Error(err, res)
							}
							mu.Lock()
							lat = append(lat, d)
							mu.Unlock()
						}
					})
				}
				for b.Loop() {
					work <- struct{}{}
				}
				close(work)
				wg.Wait()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
				reportLatency(b, lat)
			})
		}
	}
	b.Run("rss=3-upstreams", func(b *testing.B) {
		cmd := exec.Command(tbBin, "--data", filepath.Join(b.TempDir(), "data"), "--log-level", "error", "mcp")
		cmd.Env = append(os.Environ(), "TRACEBRIDGE_CONFIG="+gatewayConfig(b, "one", "two", "three"), "XDG_CONFIG_HOME="+b.TempDir())
		s := connectCmd(b, cmd)
		defer s.Close()
		for b.Loop() {
			for _, t := range []string{"one__ok", "two__ok", "three__ok"} {
				if res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: t}); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		}
		b.ReportMetric(vmRSS(cmd.Process.Pid)/1024, "bridge-RSS-MiB")
		b.ReportMetric(0, "ns/op")
	})
}

// gatewaySession connects a go-sdk client by path and names the tool to
// call.
func gatewaySession(b *testing.B, path string) (*sdk.ClientSession, string) {
	switch path {
	case "direct":
		return connectCmd(b, faultServerCmd()), "ok"
	case "builtin-stdio": // the same no-op as a built-in tool: what tracebridge costs without the hop
		cmd := bridgeCmd(filepath.Join(b.TempDir(), "data"))
		return connectCmd(b, cmd), "test_echo"
	case "tracebridge-stdio":
		cmd := exec.Command(tbBin, "--data", filepath.Join(b.TempDir(), "data"), "--log-level", "error", "mcp")
		cmd.Env = append(os.Environ(), "TRACEBRIDGE_CONFIG="+gatewayConfig(b, "up"), "XDG_CONFIG_HOME="+b.TempDir())
		return connectCmd(b, cmd), "up__ok"
	}
	url, token, _, _ := startHTTPBridge(b, filepath.Join(b.TempDir(), "data"), "TRACEBRIDGE_CONFIG="+gatewayConfig(b, "up"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token: token}}, MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-06-18"})
	if err != nil {
		b.Fatal(err)
	}
	return s, "up__ok"
}
