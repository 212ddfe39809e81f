package tools

import (
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"unicode"

	"github.com/tracebridge/tracebridge/events"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
)

// Standard Okapi BM25 parameters.
const (
	DefaultK1 = 1.2
	DefaultB  = 0.75
)

// BM25Args are the arguments of bm25_text_search.
type BM25Args struct {
	Query      string   `json:"query" jsonschema:"the words to rank the entries by"`
	Entries    []Entry  `json:"entries" jsonschema:"the texts to rank (the corpus of this request only)"`
	K1         *float64 `json:"k1,omitempty" jsonschema:"term-frequency saturation (default 1.2)"`
	B          *float64 `json:"b,omitempty" jsonschema:"length normalisation, 0 to 1 (default 0.75)"`
	MaxResults int      `json:"maxResults,omitempty" jsonschema:"results to return, 1 to 10000 (default 100)"`
}

// Scored is one ranked entry.
type Scored struct {
	ID           string   `json:"id"`
	Score        float64  `json:"score"`
	MatchedTerms []string `json:"matchedTerms"`
}

// BM25Result is what bm25_text_search returns.
type BM25Result struct {
	Results       []Scored `json:"results"`
	DocumentCount int      `json:"documentCount"`
	K1            float64  `json:"k1"`
	B             float64  `json:"b"`
	Limited       bool     `json:"limited"`
}

// BM25 is the bm25_text_search tool.
//
// secret, when set, says whether a term is a registered secret or part of
// one: such a term is left out of matchedTerms (the client sent it, but the
// answer is recorded, and the log must not hold it in any spelling).
func BM25(secret func(term string) bool) *executor.Tool {
	run := bm25Rank
	if secret != nil {
		run = func(ctx context.Context, a BM25Args) (BM25Result, error) {
			res, err := bm25Rank(ctx, a)
			for i := range res.Results {
				res.Results[i].MatchedTerms = slices.DeleteFunc(res.Results[i].MatchedTerms, secret)
			}
			return res, err
		}
	}
	return &executor.Tool{
		Descriptor: executor.Descriptor{
			ID: "bm25_text_search", Category: "search", Source: "builtin", Capabilities: []string{config.CapTextSearch},
			Description: "Rank given entries against a query with Okapi BM25 (k1, b adjustable). The corpus is only the entries of this request. Returns scores and matched terms, best first.",
		},
		InputSchema: executor.SchemaFor[BM25Args](),
		Run:         typedRun(run),
	}
}

// bm25Rank scores every entry containing a query term.
func bm25Rank(ctx context.Context, a BM25Args) (BM25Result, error) {
	res := BM25Result{Results: []Scored{}, DocumentCount: len(a.Entries), K1: DefaultK1, B: DefaultB}
	if a.K1 != nil {
		res.K1 = *a.K1
	}
	if a.B != nil {
		res.B = *a.B
	}
	if res.K1 < 0 || res.B < 0 || res.B > 1 || math.IsNaN(res.K1) || math.IsNaN(res.B) {
		return res, events.Errorf(events.CodeInvalidArguments, "k1 must be ≥ 0 and b between 0 and 1")
	}
	max, err := maxResults(a.MaxResults)
	if err != nil {
		return res, err
	}
	if err := checkSize(a.Entries); err != nil {
		return res, err
	}
	terms := unique(tokenize(a.Query))
	if len(terms) == 0 {
		return res, events.Errorf(events.CodeInvalidArguments, "the query has no words")
	}
	docs := make([]map[string]int, len(a.Entries))
	lengths := make([]int, len(a.Entries))
	df := map[string]int{}
	total := 0
	for i, e := range a.Entries {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		tf := map[string]int{}
		toks := tokenize(e.Text)
		for _, t := range toks {
			tf[t]++
		}
		docs[i], lengths[i] = tf, len(toks)
		total += len(toks)
		for _, t := range terms {
			if tf[t] > 0 {
				df[t]++
			}
		}
	}
	n := float64(len(a.Entries))
	avgdl := float64(total) / n
	for i, e := range a.Entries {
		var score float64
		var matched []string
		for _, t := range terms {
			f := float64(docs[i][t])
			if f == 0 {
				continue
			}
			idf := math.Log((n-float64(df[t])+0.5)/(float64(df[t])+0.5) + 1)
			norm := 1.0
			if avgdl > 0 {
				norm = 1 - res.B + res.B*float64(lengths[i])/avgdl
			}
			score += idf * f * (res.K1 + 1) / (f + res.K1*norm)
			matched = append(matched, t)
		}
		if len(matched) > 0 {
			res.Results = append(res.Results, Scored{ID: e.ID, Score: score, MatchedTerms: matched})
		}
	}
	sort.SliceStable(res.Results, func(i, j int) bool {
		if res.Results[i].Score != res.Results[j].Score {
			return res.Results[i].Score > res.Results[j].Score
		}
		return res.Results[i].ID < res.Results[j].ID
	})
	if len(res.Results) > max {
		res.Results, res.Limited = res.Results[:max], true
	}
	return res, nil
}

// tokenize lowercases and splits on anything but letters and digits.
func tokenize(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func unique(ss []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
