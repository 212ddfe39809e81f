package export

import (
	"encoding/xml"
	"io"
)

// JUnit is JUnit XML, the report format CI systems show in their test views
// (Jenkins, GitLab, GitHub Actions through a reporter): drift and failed
// runs become failing test cases with the diff or verdict as their text.
type JUnit struct {
	XMLName  xml.Name `xml:"testsuites"`
	Name     string   `xml:"name,attr"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Errors   int      `xml:"errors,attr"`
	Suites   []Suite  `xml:"testsuite"`
}

// Suite is one testsuite: a session file, or the runs of a log.
type Suite struct {
	Name     string  `xml:"name,attr"`
	Tests    int     `xml:"tests,attr"`
	Failures int     `xml:"failures,attr"`
	Errors   int     `xml:"errors,attr"`
	Time     float64 `xml:"time,attr"`
	Cases    []Case  `xml:"testcase"`
}

// Case is one testcase: a session or one of its runs, or a run.
type Case struct {
	Name      string   `xml:"name,attr"`
	Classname string   `xml:"classname,attr"`
	Time      float64  `xml:"time,attr"`
	Failure   *Problem `xml:"failure,omitempty"`
	Error     *Problem `xml:"error,omitempty"`
}

// Problem is a case's failure (drift, a failed run) or error.
type Problem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// Add appends c to the suite and counts it.
func (s *Suite) Add(c Case) {
	s.Cases = append(s.Cases, c)
	s.Tests++
	if c.Failure != nil {
		s.Failures++
	}
	if c.Error != nil {
		s.Errors++
	}
}

// Write totals the suites and writes the report.
func (r *JUnit) Write(w io.Writer) error {
	r.Tests, r.Failures, r.Errors = 0, 0, 0
	for _, s := range r.Suites {
		r.Tests += s.Tests
		r.Failures += s.Failures
		r.Errors += s.Errors
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
