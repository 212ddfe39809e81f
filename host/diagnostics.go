package host

import (
	"bufio"
	"regexp"
	"strconv"
	"strings"
)

// Diagnostic is one problem a diagnostics command or an editor reported
// (1-based lines and columns).
type Diagnostic struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	Column    int    `json:"column,omitempty"`
	EndLine   int    `json:"endLine,omitempty"`
	EndColumn int    `json:"endColumn,omitempty"`
	Severity  string `json:"severity"` // error | warning | info | hint
	Source    string `json:"source,omitempty"`
	Code      string `json:"code,omitempty"`
	Message   string `json:"message"`
}

// The common forms: `file:line:col: message`, `file:line: message`, with an
// optional leading "severity:" in the message (gcc, go vet, eslint unix,
// tsc --pretty false is handled by tscRE).
var (
	colonRE = regexp.MustCompile(`^(?:[a-z]+:\s+)?([^\s:][^:]*?):(\d+)(?::(\d+))?:\s*(.+)$`) // "vet: " and the like are tool prefixes
	tscRE   = regexp.MustCompile(`^([^\s(][^(]*)\((\d+),(\d+)\):\s*(error|warning|info)\s*(.*)$`)
	sevRE   = regexp.MustCompile(`(?i)^(fatal error|error|warning|warn|note|info)\s*:?\s*(.*)$`)
)

// MaxDiagnostics caps what one parse returns.
const MaxDiagnostics = 1000

// parseDiagnostics reads a command's output line by line and returns what it
// recognises; other lines are ignored.
func parseDiagnostics(out string) []Diagnostic {
	diags := []Diagnostic{}
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(diags) < MaxDiagnostics {
		l := strings.TrimRight(sc.Text(), "\r")
		var d Diagnostic
		if m := tscRE.FindStringSubmatch(l); m != nil {
			d = Diagnostic{File: m[1], Line: atoi(m[2]), Column: atoi(m[3]), Severity: m[4], Message: strings.TrimSpace(m[5])}
		} else if m := colonRE.FindStringSubmatch(l); m != nil {
			d = Diagnostic{File: m[1], Line: atoi(m[2]), Column: atoi(m[3]), Severity: "error", Message: strings.TrimSpace(m[4])}
			if s := sevRE.FindStringSubmatch(d.Message); s != nil {
				d.Severity, d.Message = severity(s[1]), s[2]
			}
		} else {
			continue
		}
		if d.Line <= 0 || d.Message == "" || strings.Contains(d.File, "://") {
			continue
		}
		diags = append(diags, d)
	}
	return diags
}

func severity(s string) string {
	switch strings.ToLower(s) {
	case "warning", "warn":
		return "warning"
	case "note", "info":
		return "info"
	}
	return "error"
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}
