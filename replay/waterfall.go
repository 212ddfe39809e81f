package replay

import (
	"cmp"
	"slices"

	"github.com/tracebridge/tracebridge/events"
)

// Span is a step of a run that took time, as a waterfall shows it: it
// ends at its event and lasted the event's durationMs.
type Span struct {
	Kind     string          `json:"kind"`
	Boundary events.Boundary `json:"boundary"`
	Code     events.Code     `json:"code,omitempty"`
	StartMs  float64         `json:"startMs"` // from the run's first event
	Ms       float64         `json:"ms"`
}

// End is where the span ends, from the run's first event.
func (s Span) End() float64 { return s.StartMs + s.Ms }

// Waterfall returns the spans of a run's events, in the order they start,
// from the earliest instant any of them covers. An operator's approval
// wait is a span of its own (approval.decided).
func Waterfall(evs []events.Event) []Span {
	var out []Span
	first := 0.0
	for _, e := range evs {
		if e.DurationMs <= 0 {
			continue
		}
		end := events.Ms(e.Time.Sub(evs[0].Time))
		out = append(out, Span{Kind: e.Kind, Boundary: e.Boundary, Code: e.Code, StartMs: end - e.DurationMs, Ms: e.DurationMs})
		if len(out) == 1 || out[len(out)-1].StartMs < first {
			first = out[len(out)-1].StartMs
		}
	}
	for i := range out {
		out[i].StartMs -= first
	}
	slices.SortStableFunc(out, func(a, b Span) int {
		if c := cmp.Compare(a.StartMs, b.StartMs); c != 0 {
			return c
		}
		return cmp.Compare(b.Ms, a.Ms) // the enclosing one first
	})
	return out
}

// SelfTime is the time of each boundary with every instant of the run
// counted once: an instant belongs to the innermost span covering it (the
// last to start; of two, the shorter). Nested spans (the MCP request
// around the executor around the tool around the pipe) are not summed,
// so the boundaries add up to the time the spans cover, and an
// operator's wait is the approval boundary's, not the request's.
func SelfTime(spans []Span) map[string]float64 {
	var cuts []float64
	for _, s := range spans {
		cuts = append(cuts, s.StartMs, s.End())
	}
	slices.Sort(cuts)
	cuts = slices.Compact(cuts)
	out := map[string]float64{}
	for i := 0; i+1 < len(cuts); i++ {
		lo, hi := cuts[i], cuts[i+1]
		mid := (lo + hi) / 2
		best := -1
		for j, s := range spans {
			if s.StartMs > mid {
				break // sorted by start: none later covers mid
			}
			if s.End() <= mid {
				continue
			}
			if best < 0 || s.StartMs > spans[best].StartMs || s.StartMs == spans[best].StartMs && s.Ms <= spans[best].Ms {
				best = j
			}
		}
		if best >= 0 {
			out[string(spans[best].Boundary)] += hi - lo
		}
	}
	return out
}
