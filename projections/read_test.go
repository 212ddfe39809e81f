package projections

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

type rows []json.RawMessage

func (r rows) View(context.Context, Query) ([]json.RawMessage, error) { return r, nil }

// Read decodes each row as the view's type, and names the view when a row
// does not decode instead of leaving it out.
func TestReadDecodesOrSaysWhichView(t *testing.T) {
	got, err := Read[Pin](context.Background(), rows{json.RawMessage(`{"name":"fs__read","state":"pinned"}`)}, Query{View: ViewPins})
	if err != nil || len(got) != 1 || got[0].Name != "fs__read" {
		t.Fatalf("%+v %v", got, err)
	}
	_, err = Read[Pin](context.Background(), rows{json.RawMessage(`{"name":1}`)}, Query{View: ViewPins})
	var syntax *json.UnmarshalTypeError
	if err == nil || !strings.Contains(err.Error(), "pins view") || !errors.As(err, &syntax) {
		t.Fatalf("a bad row: %v", err)
	}
}

// Every projection is named by one of the view constants.
func TestViewNamesAreTheConstants(t *testing.T) {
	known := map[string]bool{ViewRuns: true, ViewAudit: true, ViewProposals: true, ViewReviews: true, ViewSessions: true, ViewApprovals: true, ViewPins: true, ViewOffers: true, ViewWeakened: true, ViewSpawns: true}
	for _, p := range All() {
		if !known[p.Name()] {
			t.Errorf("projection %s has no View constant", p.Name())
		}
		delete(known, p.Name())
	}
	if len(known) != 0 {
		t.Errorf("constants name no projection: %v", known)
	}
}
