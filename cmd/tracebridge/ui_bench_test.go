package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

func median(xs []float64) float64 {
	slices.Sort(xs)
	if len(xs) == 0 {
		return 0
	}
	return xs[len(xs)/2]
}

// BenchmarkUIRunsPage10k: the runs page of a log holding 10,000 runs, in
// Chromium. Reports, from the start of the navigation (median over
// iterations): the response fully received (the server's query and
// render), DOMContentLoaded (the 200 newest rows in the DOM) and the load
// event (styles and scripts in); and the wall time of the first, cold load
// (token exchange, redirect, projection catch-up). Headless Chromium
// records no paint timing entries, so no paint time is reported.
func BenchmarkUIRunsPage10k(b *testing.B) {
	data := filepath.Join(b.TempDir(), "data")
	if out, err := exec.Command(tbBin, "--data", data, "--log-level", "warn", "loadgen", "--requests", "10000", "--events", "6",
		"--concurrency", "16", "--attr-bytes", "32").CombinedOutput(); err != nil {
		b.Fatalf("loadgen: %v %s", err, out)
	}
	start(b, tbBin, data, "serve", "--ui", "127.0.0.1:0")
	url := uiURL(b, data)
	ctx := newBrowser(b)
	root := strings.SplitN(url, "/?", 2)[0]
	var rows int
	t0 := time.Now()
	if err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.WaitVisible("#runs-body", chromedp.ByQuery),
		chromedp.Evaluate(`document.querySelectorAll("#runs-body tr.run").length`, &rows)); err != nil {
		b.Fatal(err)
	}
	cold := time.Since(t0)
	if rows != 200 {
		b.Fatalf("the runs page lists %d runs, want the newest 200 of 10,000", rows)
	}
	var resp, dcl, load []float64
	for b.Loop() {
		var m struct{ Resp, DCL, Load float64 }
		if err := chromedp.Run(ctx, chromedp.Navigate(root+"/runs"), chromedp.WaitVisible("#runs-body tr.run", chromedp.ByQuery),
			chromedp.Poll(`(() => { const n = performance.getEntriesByType("navigation")[0];
				return n.loadEventEnd > 0 && {Resp: n.responseEnd, DCL: n.domContentLoadedEventEnd, Load: n.loadEventEnd}; })()`, &m)); err != nil {
			b.Fatal(err)
		}
		resp, dcl, load = append(resp, m.Resp), append(dcl, m.DCL), append(load, m.Load)
	}
	b.ReportMetric(float64(cold.Microseconds())/1000, "cold-load-ms")
	b.ReportMetric(median(resp), "response-ms")
	b.ReportMetric(median(dcl), "dom-ready-ms")
	b.ReportMetric(median(load), "load-ms")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkUISSELatency: a runs page open in Chromium while another process
// appends 1,000 events/s (100 ticks of 10 events per second, each tick
// flushed). Reports, per event, the time from the event's timestamp (set
// when it is emitted, before it is committed) to its arrival in the page's
// EventSource handler: p50, p99 and max. One iteration is one second of
// load. runs-page is the runs page as an operator has it (it also refetches
// its rows at most every 250 ms); stream-only is a bare EventSource on
// another page, which separates delivery from the page's own work.
func BenchmarkUISSELatency(b *testing.B) {
	b.Run("runs-page", func(b *testing.B) { sseLatency(b, false) })
	b.Run("stream-only", func(b *testing.B) { sseLatency(b, true) })
}

func sseLatency(b *testing.B, bare bool) {
	data := filepath.Join(b.TempDir(), "data")
	start(b, tbBin, data, "serve", "--ui", "127.0.0.1:0")
	url := uiURL(b, data)
	ctx := newBrowser(b)
	if err := chromedp.Run(ctx, chromedp.Navigate(url), chromedp.WaitVisible("#live.on", chromedp.ByQuery)); err != nil {
		b.Fatal(err)
	}
	if bare {
		if err := chromedp.Run(ctx, chromedp.Navigate(strings.SplitN(url, "/?", 2)[0]+"/sessions"),
			chromedp.Evaluate(`new EventSource("/events").addEventListener("commit",
				m => tracebridge.latencies.push(Date.now() - JSON.parse(m.data).time)); true`, nil)); err != nil {
			b.Fatal(err)
		}
	}
	bg := context.Background()
	node, err := hub.Open(bg, hub.Options{Dir: hub.DataDir(data), Role: hub.Elect, Name: "bench-load"})
	if err != nil {
		b.Fatal(err)
	}
	defer node.Close()
	em := events.NewEmitter(node, events.EmitterOptions{})
	defer em.Close(bg)
	sent := 0
	for b.Loop() {
		next := time.Now()
		for tick := 0; tick < 100; tick++ {
			for r := 0; r < 5; r++ {
				req := em.NewID()
				em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Attrs: events.A("method", "tools/call", "tool", "bench")})
				em.Emit(events.Event{Kind: events.KindMCPResponseSent, RequestID: req, Outcome: events.OK})
				sent += 2
			}
			if err := em.FlushAll(bg); err != nil {
				b.Fatal(err)
			}
			next = next.Add(10 * time.Millisecond)
			time.Sleep(time.Until(next))
		}
	}
	b.StopTimer()
	var lat []float64
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if err := chromedp.Run(ctx, chromedp.Evaluate(`tracebridge.latencies`, &lat)); err != nil {
			b.Fatal(err)
		}
		if len(lat) >= sent {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if len(lat) < sent {
		b.Fatalf("the page heard %d of %d events", len(lat), sent)
	}
	slices.Sort(lat)
	b.ReportMetric(lat[len(lat)/2], "p50-ms")
	b.ReportMetric(lat[len(lat)*99/100], "p99-ms")
	b.ReportMetric(lat[len(lat)-1], "max-ms")
	b.ReportMetric(float64(sent)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(0, "ns/op")

}
