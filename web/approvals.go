package web

// The approvals page: calls waiting, upstream tools changed or held by the
// guard (and servers whose identity changed), edit proposals, the
// configuration weakenings above them, and each command server's last
// start (its executable, hash and confinement).

import (
	"encoding/json"
	"net/http"
	"slices"
	"sort"

	"github.com/tracebridge/tracebridge/host"
	"github.com/tracebridge/tracebridge/projections"
)

type approvalsData struct {
	// Weakened are the latest reloads that loosened the configuration:
	// what an operator deciding here should know first.
	Weakened []projections.Weakening
	Tools    []projections.Approval
	Changed  []changedTool
	// Spawns are each command server's last start: what ran, confined how.
	Spawns    []projections.Spawn
	Pending   []*host.Proposal
	Done      []*host.Proposal
	HostError string
	Flash     string
}

// changedTool is an upstream tool refused with ToolChanged until an
// operator accepts its new descriptor, with the diff to look at.
type changedTool struct {
	Pin   projections.Pin
	Diff  string
	Whole bool // both descriptors are shown whole (else it cannot be accepted)
	// Findings are why the guard held it (first sight: flagged) or what
	// it found in the change.
	Findings []finding
}

// finding is one of the guard's findings as the page shows it.
type finding struct{ Rule, Why, Trigger string }

func findingsOf(j string) []finding {
	var fs []finding
	json.Unmarshal([]byte(j), &fs)
	return fs
}

// shownWeakenings is how many of the latest configuration weakenings the
// approvals page shows.
const shownWeakenings = 5

// recentDone is how many decided proposals the approvals page shows with
// their diff.
const recentDone = 20

func (s *Server) approvalsPage(w http.ResponseWriter, r *http.Request) {
	p := page{Title: "Approvals", Nav: "approvals"}
	d := approvalsData{Flash: r.URL.Query().Get("done")}
	tools, err := projections.PendingApprovals(r.Context(), s.opts.Log, s.opts.Now())
	if err != nil {
		p.Error = err.Error()
	}
	d.Tools = tools
	if w, err := projections.Read[projections.Weakening](r.Context(), s.opts.Log, projections.Query{View: projections.ViewWeakened, Limit: 1 << 16}); err == nil {
		d.Weakened = w[max(0, len(w)-shownWeakenings):]
		slices.Reverse(d.Weakened)
	}
	if sp, err := projections.Read[projections.Spawn](r.Context(), s.opts.Log, projections.Query{View: projections.ViewSpawns, Limit: 1 << 12}); err == nil {
		d.Spawns = sp
	}
	for _, state := range []string{projections.PinFlagged, projections.PinChanged} {
		pins, err := projections.Read[projections.Pin](r.Context(), s.opts.Log, projections.Query{View: projections.ViewPins, Status: state, Limit: 1000})
		if err != nil && p.Error == "" {
			p.Error = err.Error()
		}
		for _, pin := range pins {
			if pin.Pending != "" {
				diff, whole := projections.DescriptorDiff(pin, s.opts.Descriptors)
				d.Changed = append(d.Changed, changedTool{Pin: pin, Diff: diff, Whole: whole, Findings: findingsOf(pin.Findings)})
			}
		}
	}
	list, err := s.host.Proposals(r.Context())
	if err != nil {
		d.HostError = err.Error()
	}
	sort.Slice(list, func(i, j int) bool { return list[i].Created.After(list[j].Created) })
	// The list carries summaries; each diff comes on its own (one frame
	// each), for every pending proposal and the latest decided ones.
	for i := range list {
		pr := &list[i]
		full := pr
		if pr.State == host.Pending || len(d.Done) < recentDone {
			if shown, err := s.host.Proposal(r.Context(), pr.ID); err == nil {
				full = &shown
			}
		}
		if pr.State == host.Pending {
			d.Pending = append(d.Pending, full)
		} else {
			d.Done = append(d.Done, full)
		}
	}
	p.Data = d
	s.render(w, r, "approvals", p)
}
