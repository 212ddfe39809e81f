package sessions

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/replay"
)

// Drift is one difference between the recording and the re-drive.
type Drift struct {
	Run   int    // 1-based among the re-driven runs: the number in the run's triad name
	Step  int    // index in the session's steps
	Label string // the step, as a person names it
	Event int    // 1-based position among the step's in-scope events; 0: the whole step
	At    string // where the client's answer differs (a JSON path); "": not the answer
	Want  string
	Got   string
}

func (d Drift) String() string {
	if d.Step < 0 {
		return d.Label + ": " + d.Got
	}
	if d.Run == 0 { // an upstream request, not a run
		return fmt.Sprintf("%s (line %d of the file): the bridge would send the upstream another request:\n    expected %s\n    got      %s", d.Label, d.Step+2, d.Want, d.Got)
	}
	if d.At != "" {
		return fmt.Sprintf("run %02d (%s, line %d of the file): the client's answer differs at %s:\n    expected %s\n    got      %s", d.Run, d.Label, d.Step+2, d.At, d.Want, d.Got)
	}
	if d.Event == 0 {
		return fmt.Sprintf("run %02d (%s, line %d of the file): %s", d.Run, d.Label, d.Step+2, d.Got)
	}
	return fmt.Sprintf("run %02d (%s, line %d of the file), event %d:\n    expected %s\n    got      %s", d.Run, d.Label, d.Step+2, d.Event, orNone(d.Want), orNone(d.Got))
}

// collect gathers each step's run from the re-drive's log and compares it
// with the recording.
// Answers name the re-drive's pipe path where the recording's named its
// own: scrub puts the recorded one back.
func collect(ctx context.Context, s *Session, node Log, stepOf []int, operatorReqs []events.ID, scrub func(string) string) (*Redriven, error) {
	head, _, err := node.Head(ctx)
	if err != nil {
		return nil, err
	}
	var clientReqs []events.ID
	for from := uint64(1); from <= head; {
		evs, next, err := node.Range(ctx, from, 2048)
		if err != nil {
			return nil, err
		}
		for i := range evs {
			if evs[i].Kind == events.KindMCPRequestReceived {
				clientReqs = append(clientReqs, evs[i].RequestID)
			}
		}
		if len(evs) == 0 {
			break
		}
		from = next
	}
	out := &Redriven{Steps: stepOf}
	ci, oi := 0, 0
	for k, idx := range stepOf {
		st := &s.Steps[idx]
		var req events.ID
		switch {
		case st.Step == StepClient && ci < len(clientReqs):
			req = clientReqs[ci]
			ci++
		case st.Step == StepOperator && oi < len(operatorReqs):
			req = operatorReqs[oi]
			oi++
		default:
			out.Drift = append(out.Drift, Drift{Run: k + 1, Step: idx, Label: st.Label(), Got: "no request was recorded for this step"})
			continue
		}
		evs, err := node.ByRequest(ctx, req)
		if err != nil {
			return nil, err
		}
		run := replay.Judge(req, evs)
		out.Runs = append(out.Runs, run)
		drift := compare(idx, st, evs)
		if d, err := compareReply(ctx, node, idx, st, evs, scrub); err != nil {
			return nil, err
		} else if d != nil {
			drift = append(drift, *d)
		}
		for _, d := range drift {
			d.Run = k + 1
			out.Drift = append(out.Drift, d)
		}
	}
	return out, nil
}

// compare lists where the re-driven crossings of a step differ from the
// recorded ones. The host's events and the rest are compared as two
// streams: in a recording they come from two processes whose order in the
// log is not causal, in a re-drive from one.
func compare(idx int, st *Step, evs []events.Event) []Drift {
	got := Crossings(evs)
	var out []Drift
	for _, host := range []bool{false, true} {
		want, have := side(st.Expect, host), side(got, host)
		for i := 0; i < max(len(want), len(have)); i++ {
			var w, h string
			if i < len(want) {
				w = want[i].c.String()
			}
			if i < len(have) {
				h = have[i].c.String()
			}
			if w == h {
				continue
			}
			pos := len(got) + 1
			if i < len(have) {
				pos = have[i].pos
			} else if i < len(want) {
				pos = want[i].pos
			}
			out = append(out, Drift{Step: idx, Label: st.Label(), Event: pos, Want: w, Got: h})
			if len(want) != len(have) {
				out = append(out, Drift{Step: idx, Label: st.Label(), Got: fmt.Sprintf("%d %s events, the recording has %d", len(have), sideName(host), len(want))})
			}
			break
		}
	}
	return out
}

// compareReply compares the client's answer in the re-drive with the
// recorded one (steps recorded with their answer).
func compareReply(ctx context.Context, node Log, idx int, st *Step, evs []events.Event, scrub func(string) string) (*Drift, error) {
	if len(st.Reply) == 0 {
		return nil, nil
	}
	got, err := reply(ctx, node, evs)
	if err != nil {
		return nil, err
	}
	at, w, g := answerDiff(string(st.Reply), scrub(string(got)))
	if at == "" {
		return nil, nil
	}
	return &Drift{Step: idx, Label: st.Label(), At: at, Want: w, Got: g}, nil
}

// reply is the answer a run's client got, whole (nil: none recorded).
func reply(ctx context.Context, r events.PayloadReader, evs []events.Event) (json.RawMessage, error) {
	for i := range evs {
		if evs[i].Kind == events.KindMCPResponseSent {
			a, err := events.ResolveValue(ctx, r, evs[i].Attrs.Get(events.AttrAnswer))
			if err != nil || !json.Valid([]byte(a)) {
				return nil, err
			}
			return json.RawMessage(a), nil
		}
	}
	return nil, nil
}

type placed struct {
	c   Crossing
	pos int // 1-based among all the step's crossings
}

// side returns the host's crossings, or everyone else's.
func side(cs []Crossing, host bool) []placed {
	var out []placed
	for i, c := range cs {
		if (c.Boundary == events.BoundaryHost) == host {
			out = append(out, placed{c, i + 1})
		}
	}
	return out
}

func sideName(host bool) string {
	if host {
		return "host-side"
	}
	return "bridge-side"
}

// Crossings returns the in-scope crossings of a run, for --update.
func Crossings(evs []events.Event) []Crossing {
	var out []Crossing
	for i := range evs {
		if inScopeEvent(&evs[i]) {
			out = append(out, crossingOf(&evs[i]))
		}
	}
	return out
}

// Accept makes what the re-drive saw the recording: each re-driven step
// expects the run's crossings and, for a client step, the client's answer.
func (r *Redriven) Accept(ctx context.Context, log events.PayloadReader, s *Session) error {
	for k, run := range r.Runs {
		st := &s.Steps[r.Steps[k]]
		st.Expect = Crossings(run.Events)
		if st.Step == StepClient {
			reply, err := reply(ctx, log, run.Events)
			if err != nil {
				return err
			}
			if r.scrub != nil {
				reply = json.RawMessage(r.scrub(string(reply)))
			}
			st.Reply = reply
		}
	}
	return nil
}
