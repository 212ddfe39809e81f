package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

// Limits of the text tools. Go's regexp is RE2 (linear time, no
// backtracking), so with bounded input no pattern can hang the bridge.
const (
	MaxTextBytes    = 8 << 20
	MaxPatternBytes = 4 << 10
	// MaxRegexCost bounds a search's worst case: the compiled program's
	// instructions times the bytes searched. RE2 matching is linear in
	// both, at ~1.5e8 instruction-bytes a second on a 2-core machine, so
	// this is a few seconds at most; over it the search is refused before
	// it starts.
	MaxRegexCost  = 1 << 30
	DefaultMax    = 100
	MaxResultsCap = 10_000
)

// Entry is one named text to search or rank.
type Entry struct {
	ID   string `json:"id" jsonschema:"identifier of the text (a path, a URL, a note id)"`
	Text string `json:"text" jsonschema:"the text"`
}

// RegexArgs are the arguments of regex_text_search.
type RegexArgs struct {
	Pattern       string  `json:"pattern,omitempty" jsonschema:"regular expression (RE2 syntax); give pattern or query"`
	Query         string  `json:"query,omitempty" jsonschema:"literal text to find; give pattern or query"`
	Text          string  `json:"text,omitempty" jsonschema:"a text to search"`
	Entries       []Entry `json:"entries,omitempty" jsonschema:"named texts to search"`
	CaseSensitive bool    `json:"caseSensitive,omitempty" jsonschema:"match case exactly (default false)"`
	MaxResults    int     `json:"maxResults,omitempty" jsonschema:"matches to return, 1 to 10000 (default 100)"`
}

// Match is one match: where it is and what it matched.
type Match struct {
	Entry  string `json:"entry,omitempty"`
	Line   int    `json:"line"`   // 1-based
	Column int    `json:"column"` // 1-based, in bytes
	Start  int    `json:"start"`  // byte offset in the text
	End    int    `json:"end"`
	Text   string `json:"text"`
}

// RegexResult is what regex_text_search returns.
type RegexResult struct {
	Matches    []Match `json:"matches"`
	MatchCount int     `json:"matchCount"` // returned
	TotalCount int     `json:"totalCount"` // found
	Limited    bool    `json:"limited"`    // totalCount > matchCount
}

// Regex is the regex_text_search tool.
func Regex() *executor.Tool {
	return &executor.Tool{
		Descriptor: executor.Descriptor{
			ID: "regex_text_search", Category: "search", Source: "builtin", Capabilities: []string{config.CapTextSearch},
			Description: "Find a regular expression or literal text in given text or named entries. Returns each match with its line, column and byte offsets, the total count, and whether results were limited.",
		},
		InputSchema: executor.SchemaFor[RegexArgs](),
		Run:         typedRun(regexSearch),
	}
}

// typedRun adapts a function of typed arguments to an executor.RunFunc.
func typedRun[In, Out any](fn func(context.Context, In) (Out, error)) executor.RunFunc {
	return func(ctx context.Context, c executor.Call) (any, error) {
		var in In
		if len(c.Args) > 0 {
			if err := json.Unmarshal(c.Args, &in); err != nil {
				return nil, err
			}
		}
		return fn(ctx, in)
	}
}

// regexSearch runs one search.
func regexSearch(ctx context.Context, a RegexArgs) (RegexResult, error) {
	res := RegexResult{Matches: []Match{}}
	if (a.Pattern == "") == (a.Query == "") {
		return res, events.Errorf(events.CodeInvalidArguments, "give exactly one of pattern or query")
	}
	expr := a.Pattern
	if a.Query != "" {
		expr = regexp.QuoteMeta(a.Query)
	}
	if len(expr) > MaxPatternBytes {
		return res, events.Errorf(events.CodeInvalidArguments, "pattern is %d bytes; the limit is %d", len(expr), MaxPatternBytes)
	}
	if !a.CaseSensitive {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return res, events.Errorf(events.CodeInvalidArguments, "pattern: %v", err)
	}
	max, err := maxResults(a.MaxResults)
	if err != nil {
		return res, err
	}
	entries := a.Entries
	if a.Text != "" {
		entries = append([]Entry{{Text: a.Text}}, entries...)
	}
	if err := checkSize(entries); err != nil {
		return res, err
	}
	if err := checkCost(expr, entries); err != nil {
		return res, err
	}
	// regexp takes no context: the context is checked between entries and,
	// for a pattern that never spans lines, between chunks of lines, so a
	// call that ended stops working within one chunk (checkCost bounds the
	// rest).
	chunked := lineLocal(expr)
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		lines := lineStarts(e.Text)
		locs, err := findAll(ctx, re, e.Text, chunked)
		if err != nil {
			return res, err
		}
		for _, loc := range locs {
			res.TotalCount++
			if len(res.Matches) >= max {
				continue
			}
			line, col := position(lines, loc[0])
			res.Matches = append(res.Matches, Match{Entry: e.ID, Line: line, Column: col, Start: loc[0], End: loc[1], Text: e.Text[loc[0]:loc[1]]})
		}
	}
	res.MatchCount = len(res.Matches)
	res.Limited = res.TotalCount > res.MatchCount
	return res, nil
}

// chunkBytes is how much text a line-local search scans between two looks
// at its context.
const chunkBytes = 16 << 10

// findAll is re.FindAllStringIndex(s, -1), scanned in chunks of whole lines
// when chunked (the pattern cannot tell a chunk from the whole text), with
// ctx checked between chunks.
func findAll(ctx context.Context, re *regexp.Regexp, s string, chunked bool) ([][]int, error) {
	if !chunked || len(s) <= chunkBytes {
		return re.FindAllStringIndex(s, -1), nil
	}
	var out [][]int
	for start := 0; start < len(s); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		end := min(start+chunkBytes, len(s))
		if i := strings.LastIndexByte(s[start:end], '\n'); i >= 0 && end < len(s) {
			end = start + i + 1
		} else if j := strings.IndexByte(s[end:], '\n'); end < len(s) && j >= 0 {
			end += j + 1 // one line longer than a chunk: scan it whole
		} else if end < len(s) {
			end = len(s)
		}
		for _, loc := range re.FindAllStringIndex(s[start:end], -1) {
			if loc[0] == loc[1] && loc[0] == end-start && end < len(s) {
				continue // an empty match at a chunk's end: the next chunk finds it at its start
			}
			out = append(out, []int{loc[0] + start, loc[1] + start})
		}
		start = end
	}
	return out, nil
}

// lineLocal reports whether expr can be searched line by line with the
// same matches as over the whole text: nothing in it matches a newline,
// and it uses no anchor whose meaning depends on where the text starts or
// ends (^ and $ without (?m), \A, \z, and (?m)$ at a chunk's end).
func lineLocal(expr string) bool {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return false
	}
	ok := true
	var walk func(*syntax.Regexp)
	walk = func(r *syntax.Regexp) {
		switch r.Op {
		case syntax.OpAnyChar, syntax.OpBeginText, syntax.OpEndText, syntax.OpEndLine:
			ok = false
		case syntax.OpLiteral:
			for _, c := range r.Rune {
				if c == '\n' {
					ok = false
				}
			}
		case syntax.OpCharClass:
			for i := 0; i+1 < len(r.Rune); i += 2 {
				if r.Rune[i] <= '\n' && '\n' <= r.Rune[i+1] {
					ok = false
				}
			}
		}
		for _, sub := range r.Sub {
			walk(sub)
		}
	}
	walk(re)
	return ok
}

// checkCost refuses a search whose compiled program times the text it
// would scan exceeds MaxRegexCost.
func checkCost(expr string, entries []Entry) error {
	parsed, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil // Compile reported it already
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil
	}
	total := 0
	for _, e := range entries {
		total += len(e.Text)
	}
	if cost := int64(len(prog.Inst)) * int64(total); cost > MaxRegexCost {
		return &events.Err{Code: events.CodeInvalidArguments, Msg: fmt.Sprintf(
			"the pattern compiles to %d instructions; over %d bytes of text that is %d instruction-bytes, more than the limit of %d: simplify the pattern (fewer or smaller repetitions) or search less text", len(prog.Inst), total, cost, MaxRegexCost)}
	}
	return nil
}

func maxResults(n int) (int, error) {
	switch {
	case n == 0:
		return DefaultMax, nil
	case n < 0 || n > MaxResultsCap:
		return 0, events.Errorf(events.CodeInvalidArguments, "maxResults must be 1 to %d", MaxResultsCap)
	}
	return n, nil
}

func checkSize(entries []Entry) error {
	total := 0
	for _, e := range entries {
		total += len(e.Text)
	}
	if total > MaxTextBytes {
		return events.Errorf(events.CodeInvalidArguments, "%d bytes of text; the limit is %d", total, MaxTextBytes)
	}
	if len(entries) == 0 {
		return events.Errorf(events.CodeInvalidArguments, "give text or entries to search")
	}
	return nil
}

// lineStarts returns the byte offset of each line's start.
func lineStarts(s string) []int {
	starts := []int{0}
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func position(starts []int, off int) (line, col int) {
	lo, hi := 0, len(starts)-1
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if starts[mid] <= off {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo + 1, off - starts[lo] + 1
}
