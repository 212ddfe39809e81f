package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// F-P4: a 12 KB argument waits for approval with its DROP TABLE at the
// end. The approvals page and the run page show the arguments whole, and
// the decision buttons come after the whole arguments: no decision is made
// on a cut view. The harmless twin: a short argument is shown as it is.
func TestApprovalShowsTheWholeArguments(t *testing.T) {
	f := newFixture(t)
	c, _ := f.login()
	args := `{"sql":"` + strings.Repeat("SELECT 1; -- padding ", 600) + `DROP TABLE users;"}`
	long := f.askApproval(args)
	short := f.askApproval(`{"sql":"SELECT 2"}`)
	get := func(path string) string {
		t.Helper()
		resp, err := c.Get(f.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: HTTP %d", path, resp.StatusCode)
		}
		return string(b)
	}
	page := get("/approvals")
	at := strings.Index(page, `data-approval="`+long.ID+`"`)
	if at < 0 {
		t.Fatalf("the approval is not listed")
	}
	card := page[at:]
	card = card[:strings.Index(card, "</article>")]
	drop, button := strings.Index(card, "DROP TABLE users"), strings.Index(card, `value="approve"`)
	if drop < 0 || button < 0 || button < drop {
		t.Fatalf("the whole arguments (DROP TABLE at %d) are not above the approve button (%d)", drop, button)
	}
	if !strings.Contains(page, `{&#34;sql&#34;:&#34;SELECT 2&#34;}`) {
		t.Fatalf("the short twin is not shown as it is")
	}
	if run := get("/runs/" + long.RequestID.String()); !strings.Contains(run, "DROP TABLE users") {
		t.Fatalf("the run page does not show the whole arguments")
	}
	_ = short
}
