package projections

import (
	"context"
	"encoding/json"
	"fmt"
)

// The views' names, for Query.View.
const (
	ViewRuns      = "runs"
	ViewAudit     = "audit"
	ViewProposals = "proposals"
	ViewReviews   = "reviews"
	ViewSessions  = "sessions"
	ViewApprovals = "approvals"
	ViewPins      = "pins"
	ViewOffers    = "offers"
	ViewWeakened  = "weakened" // reloads that loosened the configuration
	ViewSpawns    = "spawns"   // each stdio upstream's last start
)

// Read answers q as the view's own type (Pin for pins, Approval for
// approvals, Offers for offers, …): the one place a view's rows are decoded.
// A row that does not decode is an error naming the view: the reader and
// the hub disagree on its shape (different versions).
func Read[T any](ctx context.Context, log Viewer, q Query) ([]T, error) {
	rows, err := log.View(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]T, 0, len(rows))
	for i, r := range rows {
		var v T
		if err := json.Unmarshal(r, &v); err != nil {
			return nil, fmt.Errorf("the %s view's row %d does not decode (does every process of the data dir run the same version?): %w", q.View, i, err)
		}
		out = append(out, v)
	}
	return out, nil
}
