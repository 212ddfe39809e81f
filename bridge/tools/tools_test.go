package tools

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
)

func TestRegexSearch(t *testing.T) {
	res, err := regexSearch(context.Background(), RegexArgs{
		Pattern: `fo+`, Entries: []Entry{{ID: "a.go", Text: "x\n  FOO foo\nfo"}, {ID: "b.go", Text: "none"}}, MaxResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.TotalCount != 3 || res.MatchCount != 2 || !res.Limited {
		t.Fatalf("counts %+v", res)
	}
	m := res.Matches[0]
	if m.Entry != "a.go" || m.Line != 2 || m.Column != 3 || m.Text != "FOO" || m.Start != 4 || m.End != 7 {
		t.Fatalf("first match %+v", m)
	}
	res, _ = regexSearch(context.Background(), RegexArgs{Query: "a.b", Text: "axb a.b", CaseSensitive: true})
	if res.TotalCount != 1 || res.Matches[0].Start != 4 {
		t.Fatalf("literal query matched %+v", res)
	}
}

func TestRegexRejectsBadInput(t *testing.T) {
	for name, a := range map[string]RegexArgs{
		"no pattern":     {Text: "x"},
		"both":           {Pattern: "a", Query: "a", Text: "x"},
		"bad pattern":    {Pattern: "(", Text: "x"},
		"no text":        {Pattern: "a"},
		"huge max":       {Pattern: "a", Text: "a", MaxResults: 1 << 20},
		"huge repeat":    {Pattern: "a{1001}", Text: "a"},
		"oversized text": {Pattern: "a", Text: strings.Repeat("a", MaxTextBytes+1)},
	} {
		if _, err := regexSearch(context.Background(), a); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// A pattern that makes backtracking engines take exponential time runs in
// linear time here.
func TestPathologicalPatternFinishes(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		_, err := regexSearch(context.Background(), RegexArgs{Pattern: `(a+)+$`, Text: strings.Repeat("a", 1<<16) + "!"})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second): // a generous bound on a linear-time search of 64 KiB
		t.Fatal("the search did not finish")
	}
}

func TestBM25MatchesHandComputedScores(t *testing.T) {
	entries := []Entry{{ID: "d1", Text: "the cat sat"}, {ID: "d2", Text: "the dog sat on the cat"}, {ID: "d3", Text: "birds fly"}}
	res, err := bm25Rank(context.Background(), BM25Args{Query: "cat", Entries: entries})
	if err != nil {
		t.Fatal(err)
	}
	// N=3, df(cat)=2: idf = ln((3-2+0.5)/(2+0.5)+1) = ln(1.6); avgdl = 11/3.
	idf := math.Log(1.6)
	score := func(dl float64) float64 { return idf * 1 * 2.2 / (1 + 1.2*(0.25+0.75*dl/(11.0/3))) }
	if len(res.Results) != 2 || res.Results[0].ID != "d1" || math.Abs(res.Results[0].Score-score(3)) > 1e-12 ||
		math.Abs(res.Results[1].Score-score(6)) > 1e-12 || res.DocumentCount != 3 || res.K1 != 1.2 || res.B != 0.75 {
		t.Fatalf("got %+v, want d1 %.6f then d2 %.6f", res, score(3), score(6))
	}
	zero := 0.0
	res, _ = bm25Rank(context.Background(), BM25Args{Query: "cat", Entries: entries, B: &zero})
	if res.Results[0].Score != res.Results[1].Score || res.Results[0].ID != "d1" {
		t.Fatalf("b=0 ignores length, ties break by id: %+v", res.Results)
	}
	if _, err := bm25Rank(context.Background(), BM25Args{Query: "!!", Entries: entries}); err == nil {
		t.Fatal("a query without words was accepted")
	}
}

// A pattern whose program is huge over a large text is refused before any
// work, with InvalidArguments; the same pattern over a little text runs.
func TestRegexCostIsBoundedUpFront(t *testing.T) {
	big := strings.Repeat("a", 1<<20)
	_, err := regexSearch(context.Background(), RegexArgs{Pattern: `(?:a?){1000}a{1000}`, Text: big, CaseSensitive: true})
	var ce *events.Err
	if !errors.As(err, &ce) || ce.Code != events.CodeInvalidArguments || !strings.Contains(ce.Msg, "instruction-bytes") {
		t.Fatalf("the costly search: %v", err)
	}
	if _, err := regexSearch(context.Background(), RegexArgs{Pattern: `(?:a?){1000}a{1000}`, Text: strings.Repeat("a", 2000), CaseSensitive: true}); err != nil {
		t.Fatalf("the same pattern over 2000 bytes: %v", err)
	}
	if _, err := regexSearch(context.Background(), RegexArgs{Pattern: `func \w+\(`, Text: strings.Repeat("func a(\n", 1<<18)}); err != nil {
		t.Fatalf("an ordinary pattern over 2 MB: %v", err)
	}
	// A call that already ended does no work.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := regexSearch(ctx, RegexArgs{Pattern: "a", Text: big}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled search: %v", err)
	}
}

// Searching line by line in chunks finds exactly what one scan of the whole
// text finds, for patterns that qualify; those that do not are scanned
// whole.
func TestChunkedSearchMatchesTheWholeScan(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	patterns := []string{`a+`, `\bcat\b`, `x*`, `(?i)ERROR`, `(?m)^a`, `[a-c]{2,}`, `b?`, `\w+ \w+`, `\d+`, `(?m)^$`, `[^\n]{3}`}
	alphabet := "abc xyz\n1\n"
	for _, p := range patterns {
		re := regexp.MustCompile(p)
		for n := 0; n < 8; n++ {
			b := make([]byte, r.IntN(3*chunkBytes))
			for i := range b {
				b[i] = alphabet[r.IntN(len(alphabet))]
			}
			if n%5 == 0 { // a line longer than a chunk
				copy(b[len(b)/3:], strings.Repeat("a", min(len(b)/2, chunkBytes+100)))
			}
			s := string(b)
			got, _ := findAll(context.Background(), re, s, lineLocal(p))
			want := re.FindAllStringIndex(s, -1)
			if len(got) != len(want) {
				t.Fatalf("%s over %d bytes (chunked %v): %d matches, want %d", p, len(s), lineLocal(p), len(got), len(want))
			}
			for i := range got {
				if got[i][0] != want[i][0] || got[i][1] != want[i][1] {
					t.Fatalf("%s: match %d at %v, want %v", p, i, got[i], want[i])
				}
			}
		}
	}
	for _, p := range []string{`^a`, `a$`, `(?s)a.b`, `a\nb`, `[\s]+`, `\Aa`, `(?m)a$`} {
		if lineLocal(p) {
			t.Errorf("%s is taken for line-local", p)
		}
	}
}

// A search whose call ends while it scans one long entry stops with the
// context's error instead of finishing the entry.
func TestRegexStopsWithinAnEntryWhenTheCallEnds(t *testing.T) {
	text := strings.Repeat(strings.Repeat("a", 60)+"\n", 1<<20/61*2) // 2 MB of lines
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	// ~300 instructions over 2 MB: seconds of work, well within the cost bound.
	_, err := regexSearch(ctx, RegexArgs{Pattern: `(?:a?){100}a{100}`, Text: text, CaseSensitive: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("the search finished the entry after its call ended: %v", err)
	}
}
