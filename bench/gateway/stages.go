//go:build linux

package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// stages are where a path's sequential calls spent their time, read from
// the evidence tracebridge wrote: per step from one event of a call to the
// next (as the log orders them), the gaps of every call; inside, the first
// event to the last; client, what the client measured. What the log does
// not see — reading the request before its first event, the durable flush
// after its last, writing the answer — is client minus inside.
type stages struct {
	steps  []string // in the order calls take them
	gaps   map[string][]time.Duration
	inside []time.Duration
	client []time.Duration
}

func (s *stages) add(o *stages) {
	if s.gaps == nil {
		s.gaps = map[string][]time.Duration{}
	}
	for _, k := range o.steps {
		if _, ok := s.gaps[k]; !ok {
			s.steps = append(s.steps, k)
		}
		s.gaps[k] = append(s.gaps[k], o.gaps[k]...)
	}
	s.inside = append(s.inside, o.inside...)
	s.client = append(s.client, o.client...)
}

// readStages reads the tools/call requests whose first event falls in
// [from, to] from the store at path (its process ended).
func readStages(path string, from, to time.Time, client []time.Duration) (*stages, error) {
	st, err := store.Open(path, store.Options{})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	byReq := map[events.ID][]events.Event{}
	var order []events.ID
	for next := uint64(1); ; {
		evs, err := st.Range(next, 4096)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			break
		}
		for _, e := range evs {
			next = e.Seq + 1
			if e.RequestID.IsZero() {
				continue
			}
			if _, ok := byReq[e.RequestID]; !ok {
				if e.Time.Before(from) || e.Time.After(to) {
					continue
				}
				order = append(order, e.RequestID)
			}
			byReq[e.RequestID] = append(byReq[e.RequestID], e)
		}
	}
	s := &stages{gaps: map[string][]time.Duration{}, client: client}
	for _, id := range order {
		evs := byReq[id]
		if !slices.ContainsFunc(evs, func(e events.Event) bool { return e.Kind == events.KindUpstreamRequestSent }) {
			continue // not a call through the gateway
		}
		for i := 1; i < len(evs); i++ {
			k := string(evs[i-1].Kind) + " → " + string(evs[i].Kind)
			if _, ok := s.gaps[k]; !ok {
				s.steps = append(s.steps, k)
			}
			s.gaps[k] = append(s.gaps[k], evs[i].Time.Sub(evs[i-1].Time))
		}
		s.inside = append(s.inside, evs[len(evs)-1].Time.Sub(evs[0].Time))
	}
	if len(s.inside) == 0 {
		return nil, fmt.Errorf("%s holds no call through the gateway between %v and %v", path, from, to)
	}
	return s, nil
}

// reportStages writes each tracebridge path's steps: the p50 of each, of
// the time inside the log, and of the client's round trip.
func reportStages(out io.Writer, chosen []pathKind, all map[string]*stages) {
	for _, pk := range chosen {
		s := all[pk.name]
		if s == nil {
			continue
		}
		fmt.Fprintf(out, "\nwhere a sequential call's time goes through %s (from its evidence; p50 of %d calls; steps as the log orders them):\n", pk.name, len(s.inside))
		w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		for _, k := range s.steps {
			if g := s.gaps[k]; len(g) >= len(s.inside)/2 { // a step most calls take
				fmt.Fprintf(w, "  %s\t%7.0f µs\t\n", k, us(p50(g)))
			}
		}
		in, cl := p50(s.inside), p50(s.client)
		fmt.Fprintf(w, "  first event → last (inside the log)\t%7.0f µs\t\n", us(in))
		fmt.Fprintf(w, "  the client's round trip\t%7.0f µs\t\n", us(cl))
		fmt.Fprintf(w, "  outside the log (the request read, the durable flush, the answer written, the client's own work)\t%7.0f µs\t\n", us(cl-in))
		w.Flush()
	}
}

func p50(d []time.Duration) time.Duration {
	s := slices.SortedFunc(slices.Values(d), func(a, b time.Duration) int { return cmp.Compare(a, b) })
	return s[len(s)/2]
}

func us(d time.Duration) float64 { return float64(d) / 1e3 }
