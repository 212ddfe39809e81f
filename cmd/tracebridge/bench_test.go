package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/internal/confine"
)

// runBareServer is a go-sdk server with one echo tool and nothing else: the
// baseline tracebridge's added latency is measured against.
func runBareServer() {
	s := sdk.NewServer(&sdk.Implementation{Name: "bare", Version: "0"}, nil)
	type args struct {
		Text string `json:"text,omitempty"`
	}
	sdk.AddTool(s, &sdk.Tool{Name: "test_echo", Description: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, map[string]any, error) {
		return nil, map[string]any{"text": a.Text}, nil
	})
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

func connectCmd(b *testing.B, cmd *exec.Cmd) *sdk.ClientSession {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "0"}, nil).Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		b.Fatal(err)
	}
	return s
}

func bridgeCmd(data string) *exec.Cmd {
	cmd := exec.Command(tbTestBin, "--data", data, "--log-level", "error", "mcp")
	cmd.Env = append(os.Environ(), "XDG_CONFIG_HOME="+filepath.Join(data, "..", "cfg"))
	return cmd
}

func reportLatency(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	if len(lat) == 0 {
		return
	}
	b.ReportMetric(float64(lat[len(lat)/2])/1e3, "p50-µs")
	b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)])/1e3, "p99-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkToolCall is one tools/call of a no-op echo tool at a time,
// through the real tracebridge binary (request + executor + audit events,
// durable before the answer) and through a bare go-sdk server.
func BenchmarkToolCall(b *testing.B) {
	for _, server := range []string{"tracebridge", "bare-go-sdk"} {
		b.Run("server="+server, func(b *testing.B) {
			var cmd *exec.Cmd
			if server == "tracebridge" {
				cmd = bridgeCmd(filepath.Join(b.TempDir(), "data"))
			} else {
				cmd = exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), "TB_BARE_MCP_SERVER=1")
			}
			s := connectCmd(b, cmd)
			defer s.Close()
			ctx := context.Background()
			var lat []time.Duration
			for b.Loop() {
				t0 := time.Now()
				res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "test_echo", Arguments: map[string]any{"text": "x"}})
				lat = append(lat, time.Since(t0))
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
			reportLatency(b, lat)
		})
	}
}

// BenchmarkConcurrentClients is 16 AI clients (16 tracebridge mcp processes
// on one data dir, one hub) calling regex_text_search as fast as they can.
func BenchmarkConcurrentClients(b *testing.B) {
	const clients = 16
	data := filepath.Join(b.TempDir(), "data")
	var sessions []*sdk.ClientSession
	for i := 0; i < clients; i++ {
		s := connectCmd(b, bridgeCmd(data))
		defer s.Close()
		sessions = append(sessions, s)
	}
	var next atomic.Int64
	b.ResetTimer()
	var wg sync.WaitGroup
	for _, s := range sessions {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "regex_text_search",
					Arguments: map[string]any{"query": "needle", "text": "hay needle hay"}})
				if err != nil || res.IsError {
					b.Error(err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkStartup is spawn → initialize → first tools/list answer, on a
// fresh data dir (so the bridge also elects itself hub and starts NATS),
// and the resident memory of the idle bridge right after.
func BenchmarkStartup(b *testing.B) {
	var lat []time.Duration
	var rss []float64
	for i := 0; b.Loop(); i++ {
		cmd := bridgeCmd(filepath.Join(b.TempDir(), fmt.Sprint("d", i), "data"))
		t0 := time.Now()
		s := connectCmd(b, cmd)
		if _, err := s.ListTools(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		b.StopTimer()
		time.Sleep(200 * time.Millisecond) // idle
		if kb := vmRSS(cmd.Process.Pid); kb > 0 {
			rss = append(rss, kb)
		}
		s.Close()
		b.StartTimer()
	}
	slices.Sort(rss)
	if len(rss) > 0 {
		b.ReportMetric(rss[len(rss)/2]/1024, "idle-RSS-MiB")
	}
	reportLatency(b, lat)
}

// vmRSS reads a process's resident set size in KiB from /proc.
func vmRSS(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return 0
}

// BenchmarkUpstreamStart is what confinement costs a stdio upstream's
// start: /usr/bin/true run to its exit directly and through tracebridge's
// trampoline with the plan a server gets (planned anew each time, as the
// gateway does), interleaved in one loop; medians of each and their
// difference.
func BenchmarkUpstreamStart(b *testing.B) {
	if confine.ABI() == 0 {
		b.Fatal("Landlock is not available here: nothing to measure")
	}
	const target = "/usr/bin/true"
	dir := b.TempDir()
	run := func(confined bool) time.Duration {
		t0 := time.Now()
		cmd := exec.Command(target)
		if confined {
			spec := confine.Plan(confine.Request{Exec: target, State: dir, Tmp: dir, Home: os.Getenv("HOME"), Net: confine.NetAny})
			if err := confine.WrapWith(cmd, spec, tbBin); err != nil {
				b.Fatal(err)
			}
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v: %s", err, out)
		}
		return time.Since(t0)
	}
	var plain, confined []time.Duration
	for b.Loop() {
		plain = append(plain, run(false))
		confined = append(confined, run(true))
	}
	med := func(d []time.Duration) float64 {
		slices.Sort(d)
		return float64(d[len(d)/2].Microseconds()) / 1000
	}
	p, c := med(plain), med(confined)
	b.ReportMetric(p, "plain-ms")
	b.ReportMetric(c, "confined-ms")
	b.ReportMetric(c-p, "added-ms")
	b.ReportMetric(0, "ns/op")
}
