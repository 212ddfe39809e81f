package export

import (
	"bytes"
	"encoding/xml"
	"strings"
	"testing"
)

// A report counts its suites' cases, failures and errors, and reads back
// as the same JUnit XML.
func TestJUnitCountsAndRoundTrips(t *testing.T) {
	var a, b Suite
	a.Add(Case{Name: "ok"})
	a.Add(Case{Name: "drift", Failure: &Problem{Message: "drift", Type: "Drift", Text: "run 01: <expected> & got"}})
	b.Add(Case{Name: "broken", Error: &Problem{Message: "could not re-drive", Type: "Error"}})
	r := &JUnit{Name: "t", Suites: []Suite{a, b}, Tests: 99}
	var buf bytes.Buffer
	if err := r.Write(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), xml.Header) {
		t.Fatalf("no XML header:\n%s", buf.String())
	}
	var back JUnit
	if err := xml.Unmarshal(buf.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if back.Tests != 3 || back.Failures != 1 || back.Errors != 1 || back.Suites[0].Tests != 2 || back.Suites[1].Errors != 1 {
		t.Fatalf("counts: %+v", back)
	}
	if got := back.Suites[0].Cases[1].Failure.Text; got != "run 01: <expected> & got" {
		t.Fatalf("failure text read back as %q", got)
	}
}
