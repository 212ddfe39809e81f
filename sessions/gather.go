package sessions

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/projections"
)

// EvidenceLog is what Gather reads: a hub.Node.
type EvidenceLog interface {
	events.PayloadReader
	projections.Viewer
	BySession(ctx context.Context, id events.ID, from uint64, limit int) ([]events.Event, error)
	ByRequest(ctx context.Context, id events.ID) ([]events.Event, error)
	Range(ctx context.Context, from uint64, limit int) ([]events.Event, uint64, error)
}

// Gather reads what exporting session sid needs: its runs and
// notifications, the operator runs that decided its proposals, the pinned
// descriptors and what the upstreams offered, with every payload read back
// whole in place of its reference (a session file stands alone).
func Gather(ctx context.Context, log EvidenceLog, sid events.ID) (ExportInput, error) {
	in := ExportInput{Session: sid}
	reqs, err := gatherSession(ctx, log, &in)
	if err != nil {
		return in, err
	}
	if len(reqs) == 0 && len(in.Notifications) == 0 {
		return in, fmt.Errorf("no events of session %s in this data dir (check --data, or the id: `tracebridge runs --json` shows sessionId)", sid)
	}
	proposals := map[string]bool{}
	for _, r := range reqs {
		evs, err := log.ByRequest(ctx, r)
		if err != nil {
			return in, err
		}
		for _, e := range evs {
			if id := proposalOf(ctx, log, e); id != "" {
				proposals[id] = true
			}
		}
		in.Runs = append(in.Runs, evs)
	}
	// The pinned descriptors of upstream tools and what the upstreams
	// offered: the file serves those of the servers the session called.
	if in.Pins, err = projections.Read[projections.Pin](ctx, log, projections.Query{View: projections.ViewPins, Limit: 1 << 20}); err != nil {
		return in, err
	}
	if in.Offers, err = projections.Read[projections.Offers](ctx, log, projections.Query{View: projections.ViewOffers, Limit: 1 << 20}); err != nil {
		return in, err
	}
	if len(proposals) > 0 {
		if err := gatherDecisions(ctx, log, proposals, reqs, &in); err != nil {
			return in, err
		}
	}
	return in, resolvePayloads(ctx, log, &in)
}

// gatherSession reads the session's notifications into in and returns its
// request ids in the order they began.
func gatherSession(ctx context.Context, log EvidenceLog, in *ExportInput) ([]events.ID, error) {
	var reqs []events.ID
	seen := map[events.ID]bool{}
	for from := uint64(0); ; {
		evs, err := log.BySession(ctx, in.Session, from, 2048)
		if err != nil || len(evs) == 0 {
			return reqs, err
		}
		for _, e := range evs {
			switch {
			case e.RequestID.IsZero():
				in.Notifications = append(in.Notifications, e)
			case !seen[e.RequestID]:
				seen[e.RequestID] = true
				reqs = append(reqs, e.RequestID)
			}
		}
		from = evs[len(evs)-1].Seq + 1
	}
}

// proposalOf is the proposal event e names: its proposal attribute (the
// host's proposal events), or the proposalId in a host's answer (a
// re-driven log: its recorded host leaves no proposal events). "": none.
func proposalOf(ctx context.Context, r events.PayloadReader, e events.Event) string {
	if id := e.Attrs.Get(events.AttrProposal); id != "" || e.Kind != events.KindPipeResponseReceived {
		return id
	}
	answer, err := events.ResolveValue(ctx, r, e.Attrs.Get(events.AttrAnswer))
	if err != nil || !strings.Contains(answer, `"proposalId"`) {
		return ""
	}
	var a struct {
		Payload struct {
			ProposalID string `json:"proposalId"`
		} `json:"payload"`
	}
	json.Unmarshal([]byte(answer), &a)
	return a.Payload.ProposalID
}

// gatherDecisions adds the operators' decisions on proposals (runs outside
// the session): a scan for the pipe commands that named them.
func gatherDecisions(ctx context.Context, log EvidenceLog, proposals map[string]bool, reqs []events.ID, in *ExportInput) error {
	seen := map[events.ID]bool{}
	for _, r := range reqs {
		seen[r] = true
	}
	for from := uint64(1); ; {
		evs, next, err := log.Range(ctx, from, 2048)
		if err != nil || len(evs) == 0 {
			return err
		}
		for _, e := range evs {
			if e.Kind != events.KindPipeRequestSent || e.Attrs.Get(events.AttrCommand) != pipe.CmdProposalsDecide || seen[e.RequestID] {
				continue
			}
			var p struct {
				ID string `json:"id"`
			}
			if json.Unmarshal([]byte(e.Attrs.Get(events.AttrPayload)), &p) == nil && proposals[p.ID] {
				seen[e.RequestID] = true
				run, err := log.ByRequest(ctx, e.RequestID)
				if err != nil {
					return err
				}
				in.Runs = append(in.Runs, run)
			}
		}
		from = next
	}
}

// resolvePayloads puts the whole payloads in the evidence in place of
// their references.
func resolvePayloads(ctx context.Context, r events.PayloadReader, in *ExportInput) error {
	resolve := func(evs []events.Event) error {
		for i := range evs {
			e, err := events.Resolve(ctx, r, evs[i])
			if err != nil {
				return err
			}
			evs[i] = e
		}
		return nil
	}
	for _, run := range in.Runs {
		if err := resolve(run); err != nil {
			return err
		}
	}
	if err := resolve(in.Notifications); err != nil {
		return err
	}
	for i := range in.Offers {
		for _, v := range []*string{&in.Offers[i].Prompts, &in.Offers[i].Resources, &in.Offers[i].Templates} {
			var err error
			if *v, err = events.ResolveValue(ctx, r, *v); err != nil {
				return fmt.Errorf("what %s listed: %w", in.Offers[i].Server, err)
			}
		}
	}
	for i, p := range in.Pins {
		d, err := events.ResolveValue(ctx, r, p.Descriptor)
		if err != nil {
			return fmt.Errorf("the pinned descriptor of %s: %w", p.Name, err)
		}
		in.Pins[i].Descriptor = d
	}
	return nil
}
