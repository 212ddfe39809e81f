//go:build linux

package main

import (
	"cmp"
	"fmt"
	"io"
	"runtime"
	"text/tabwriter"
	"time"
)

// report writes the table: per path the median over rounds, the added
// latency and throughput share against direct, then each round's ratios.
func report(out io.Writer, chosen []pathKind, rounds []map[string]figures, o options) {
	fmt.Fprintf(out, "bench-gateway: %d rounds; %d sequential calls, then %d in flight for %v, per path and round; %d CPUs\n\n",
		len(rounds), o.calls, o.inflight, o.duration, runtime.NumCPU())
	durs := func(a, b time.Duration) int { return cmp.Compare(a, b) }
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(w, "path\tp50\tp99\tadded p50\tcalls/s @%d\tshare of direct\tCPU/call (tree)\t\n", o.inflight)
	_, hasDirect := rounds[0]["direct"]
	directP50 := median(rounds, "direct", func(f figures) time.Duration { return f.p50 }, durs)
	directRate := median(rounds, "direct", func(f figures) float64 { return f.perSecond }, cmp.Compare[float64])
	for _, pk := range chosen {
		p50 := median(rounds, pk.name, func(f figures) time.Duration { return f.p50 }, durs)
		p99 := median(rounds, pk.name, func(f figures) time.Duration { return f.p99 }, durs)
		rate := median(rounds, pk.name, func(f figures) float64 { return f.perSecond }, cmp.Compare[float64])
		cpu := median(rounds, pk.name, func(f figures) time.Duration { return f.cpuPerCall }, durs)
		added, share := "-", "-"
		if hasDirect {
			added = fmt.Sprintf("%+.3f ms", ms(p50-directP50))
			share = fmt.Sprintf("%.2f", rate/directRate)
		}
		fmt.Fprintf(w, "%s\t%.3f ms\t%.3f ms\t%s\t%.0f\t%s\t%.0f µs\t\n", pk.name, ms(p50), ms(p99), added, rate, share, float64(cpu)/1e3)
	}
	w.Flush()
	if hasDirect {
		fmt.Fprintf(out, "\nper round (added p50 ms / share of direct's calls/s, same round):\n")
		w = tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprint(w, "path\t")
		for r := range rounds {
			fmt.Fprintf(w, "round %d\t", r+1)
		}
		fmt.Fprintln(w)
		for _, pk := range chosen {
			fmt.Fprintf(w, "%s\t", pk.name)
			for _, r := range rounds {
				fmt.Fprintf(w, "%+.3f / %.2f\t", ms(r[pk.name].p50-r["direct"].p50), r[pk.name].perSecond/r["direct"].perSecond)
			}
			fmt.Fprintln(w)
		}
		w.Flush()
	}
	fmt.Fprintln(out)
	for _, pk := range chosen {
		fmt.Fprintf(out, "%s: %s\n", pk.name, pk.note)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
