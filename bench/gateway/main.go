//go:build linux

// Command gateway (make bench-gateway) measures what one tools/call costs on
// each way of reaching the same no-op MCP server, in one run: directly, and
// through tracebridge (stdio, and its HTTP front door) beside the proxies
// people run instead, supergateway and mcp-proxy (npm, pinned by
// peers/package-lock.json). tracebridge's evidence is durable before each
// answer; the proxies write none.
//
// Per path and round: sequential calls (p50, p99, and the CPU the path's
// process tree spent per call), then calls/s with 16 in flight on one
// session. Rounds run the paths in a rotated order; the table gives the
// median over rounds, then each round's ratios (these machines are noisy:
// compare within a round).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == noopArg {
		runNoop()
		return
	}
	var o options
	flag.StringVar(&o.tracebridge, "tracebridge", "bin/tracebridge", "the tracebridge binary (make bench-gateway builds it)")
	flag.StringVar(&o.base, "base", "", "another tracebridge binary (an earlier build) measured beside it as tracebridge-stdio@base, tracebridge-http@base, tracebridge-http-2025@base: before and after in one run")
	flag.StringVar(&o.peers, "peers", "bench/gateway/peers", "where npm ci installed supergateway and mcp-proxy")
	flag.IntVar(&o.calls, "calls", 2000, "sequential calls per path and round")
	flag.IntVar(&o.inflight, "inflight", 16, "calls in flight in the throughput run")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "length of the throughput run")
	flag.IntVar(&o.rounds, "rounds", 3, "rounds (each runs every path)")
	flag.StringVar(&o.only, "only", "", "comma-separated paths to run (default all): "+strings.Join(pathNames(), ","))
	flag.Parse()
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "bench-gateway:", err)
		os.Exit(1)
	}
}

type options struct {
	tracebridge, base, peers string
	calls, inflight          int
	duration                 time.Duration
	rounds                   int
	only                     string
}

// figures are one path's measurements in one round.
type figures struct {
	stages     *stages // tracebridge's paths: where the sequential calls' time went
	p50, p99   time.Duration
	perSecond  float64       // with inflight calls in flight
	cpuPerCall time.Duration // the process tree's user+system time per sequential call
}

func run(out *os.File, o options) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, p := range []*string{&o.tracebridge, &o.peers} {
		if *p, err = filepath.Abs(*p); err != nil {
			return err
		}
	}
	if _, err := os.Stat(o.tracebridge); err != nil {
		return fmt.Errorf("%w: build it first (make build), or name it with -tracebridge", err)
	}
	all := paths
	if o.base != "" {
		if o.base, err = filepath.Abs(o.base); err != nil {
			return err
		}
		all = slices.Clone(paths)
		for _, pk := range paths {
			if strings.HasPrefix(pk.name, "tracebridge-") {
				start := pk.start
				all = append(all, pathKind{pk.name + "@base", pk.name + " with the -base binary", func(ctx context.Context, s *setup) (*path, error) {
					return start(ctx, &setup{self: s.self, tracebridge: o.base, peers: s.peers})
				}})
			}
		}
	}
	var chosen []pathKind
	for _, pk := range all {
		if o.only == "" || slices.Contains(strings.Split(o.only, ","), pk.name) {
			chosen = append(chosen, pk)
		}
	}
	if len(chosen) == 0 {
		return fmt.Errorf("no path named %q (paths: %s)", o.only, strings.Join(pathNames(), ", "))
	}
	env := &setup{self: self, tracebridge: o.tracebridge, peers: o.peers}
	rounds := make([]map[string]figures, o.rounds)
	for r := range rounds {
		rounds[r] = map[string]figures{}
		for i := range chosen {
			pk := chosen[(i+r)%len(chosen)] // rotated: no path always runs first
			fmt.Fprintf(os.Stderr, "bench-gateway: round %d/%d: %s ...\n", r+1, o.rounds, pk.name)
			f, err := measure(pk, env, o)
			if err != nil {
				return fmt.Errorf("%s: %w", pk.name, err)
			}
			rounds[r][pk.name] = f
		}
	}
	report(out, chosen, rounds, o)
	anatomy := map[string]*stages{}
	for _, r := range rounds {
		for name, f := range r {
			if f.stages != nil {
				if anatomy[name] == nil {
					anatomy[name] = &stages{}
				}
				anatomy[name].add(f.stages)
			}
		}
	}
	reportStages(out, chosen, anatomy)
	return nil
}

// measure starts a path, warms it, and takes its figures.
func measure(pk pathKind, env *setup, o options) (figures, error) {
	ctx := context.Background()
	p, err := pk.start(ctx, env)
	if err != nil {
		return figures{}, err
	}
	stopped := false
	defer func() {
		if !stopped {
			p.stop()
		}
		if p.cleanup != nil {
			p.cleanup()
		}
	}()
	call := func() error {
		res, err := p.session.CallTool(ctx, callParams(p.tool))
		if err == nil && res.IsError {
			err = fmt.Errorf("the tool answered an error: %v", res.Content)
		}
		return err
	}
	for range min(200, o.calls) {
		if err := call(); err != nil {
			return figures{}, fmt.Errorf("warming up: %w", err)
		}
	}
	cpu0 := treeCPU(p.pid)
	lat := make([]time.Duration, 0, o.calls)
	from := time.Now()
	for range o.calls {
		t0 := time.Now()
		if err := call(); err != nil {
			return figures{}, fmt.Errorf("sequential calls: %w", err)
		}
		lat = append(lat, time.Since(t0))
	}
	cpu := treeCPU(p.pid) - cpu0
	to := time.Now()
	client := slices.Clone(lat)
	slices.Sort(lat)
	f := figures{p50: lat[len(lat)/2], p99: lat[min(len(lat)-1, len(lat)*99/100)], cpuPerCall: cpu / time.Duration(o.calls)}
	n, err := flood(ctx, call, o.inflight, o.duration)
	if err != nil {
		return figures{}, fmt.Errorf("%d calls in flight: %w", o.inflight, err)
	}
	f.perSecond = float64(n) / o.duration.Seconds()
	if p.data != "" {
		p.stop()
		stopped = true
		if f.stages, err = readStages(filepath.Join(p.data, "events.db"), from, to, client); err != nil {
			return figures{}, fmt.Errorf("reading the evidence: %w", err)
		}
	}
	return f, nil
}

// flood keeps inflight calls in flight for d and counts the answers.
func flood(ctx context.Context, call func() error, inflight int, d time.Duration) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	counts := make(chan int, inflight)
	errs := make(chan error, inflight)
	for range inflight {
		go func() {
			n := 0
			for ctx.Err() == nil {
				if err := call(); err != nil {
					if ctx.Err() == nil {
						errs <- err
					}
					break
				}
				n++
			}
			counts <- n
		}()
	}
	total := 0
	for range inflight {
		total += <-counts
	}
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return total, nil
}

func median[T any](rounds []map[string]figures, name string, get func(figures) T, less func(a, b T) int) T {
	var vs []T
	for _, r := range rounds {
		vs = append(vs, get(r[name]))
	}
	slices.SortFunc(vs, less)
	return vs[len(vs)/2]
}
