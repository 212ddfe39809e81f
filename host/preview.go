package host

import (
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/textdiff"
)

// WithPreviews fills the Preview of each pending proposal with the diff it
// would apply to the files as they are now, or says why it would fail, so
// an operator sees the change before approving it. Terminal proposals keep
// the preview recorded when they were applied.
func (p *Proposals) WithPreviews(list []*Proposal) []*Proposal {
	for _, pr := range list {
		if pr.State != Pending {
			continue
		}
		pr.Preview, pr.Code, pr.Message = p.preview(pr)
		pr.Preview = scrub(p.rec, pr.Preview)
	}
	return list
}

func (p *Proposals) preview(pr *Proposal) (string, events.Code, string) {
	var out string
	for _, f := range pr.Files {
		cur, _, err := p.current(f) // what the user sees: an editor's unsaved text too
		if err != nil {
			e := events.AsErr(err, events.CodePathRefused)
			return out, e.Code, e.Msg
		}
		if baseHash(f, cur) != f.BaseHash {
			return out, events.CodeDrift, f.Path + " changed since the proposal was made: approving it now fails with Drift"
		}
		next, err := applyChange(f, cur)
		if err != nil {
			e := events.AsErr(err, events.CodeAmbiguous)
			return out, e.Code, e.Msg
		}
		out += textdiff.Unified(f.Path, string(cur), string(next))
	}
	return out, "", ""
}
