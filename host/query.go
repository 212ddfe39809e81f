package host

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
)

// ide_query answers a question in words (Dialectic's ideCapability RFC)
// with one of three outcomes: success (the answer and [file:line][]
// references), ambiguous (the candidates, each with the call that would
// answer for it), or unavailable (why, and what to configure).

// QueryResult is lsp.query's answer.
type QueryResult struct {
	Outcome     string       `json:"outcome"` // success | ambiguous | unavailable
	Message     string       `json:"message"`
	References  []string     `json:"references,omitempty"`
	Locations   []Location   `json:"locations,omitempty"`
	Refinements []Refinement `json:"refinements,omitempty"`
}

// Refinement is a more precise question an ambiguous one splits into: a
// tool call that answers it.
type Refinement struct {
	Label     string         `json:"label"`
	Tool      string         `json:"tool"`
	Arguments map[string]any `json:"arguments"`
}

var (
	backticked = regexp.MustCompile("`([A-Za-z_][A-Za-z0-9_.]*)`")
	identRE    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)?`)
	// Words of a question that never name the symbol asked about.
	stopWords = map[string]bool{"where": true, "is": true, "are": true, "the": true, "a": true, "an": true, "called": true, "used": true,
		"defined": true, "declared": true, "what": true, "does": true, "do": true, "who": true, "calls": true, "call": true, "uses": true,
		"find": true, "show": true, "me": true, "references": true, "to": true, "of": true, "definition": true, "type": true, "signature": true,
		"function": true, "method": true, "class": true, "struct": true, "how": true, "in": true, "from": true, "return": true, "returns": true,
		"mean": true, "means": true, "all": true, "callers": true, "usages": true, "usage": true, "symbol": true, "look": true, "up": true, "for": true}
)

// intent reads what the question asks: references, hover or definition.
func intent(q string) string {
	l := strings.ToLower(q)
	switch {
	case strings.Contains(l, "called") || strings.Contains(l, "caller") || strings.Contains(l, "used") || strings.Contains(l, "usage") ||
		strings.Contains(l, "reference") || strings.Contains(l, "who calls") || strings.Contains(l, "uses"):
		return "references"
	case strings.Contains(l, "what does") || strings.Contains(l, "what is") || strings.Contains(l, "type of") || strings.Contains(l, "signature") ||
		strings.Contains(l, "document"):
		return "hover"
	}
	return "definition"
}

// subject is the symbol a question names: a `quoted` one, else the last
// word that is not a question word.
func subject(q string) string {
	if m := backticked.FindStringSubmatch(q); m != nil {
		return m[1]
	}
	var last string
	for _, w := range identRE.FindAllString(q, -1) {
		if !stopWords[strings.ToLower(w)] {
			last = w
		}
	}
	return last
}

// queryForms is what ide_query can answer, as a client should ask it.
const queryForms = "ask where a symbol is defined (where is `Name` defined?), who uses it (who calls `Name`?) or what it is (what is `Name`?); " +
	"`Name` may be \"the selected symbol\""

// changeVerbs are what a question may ask that ide_query does not do: it
// reads the code, it never changes it.
var changeVerbs = []string{"rename", "refactor", "delete", "remove", "move", "extract", "inline", "format", "fix", "change", "implement", "generate", "rewrite", "replace"}

// unsupported is the verb of a question asking for a change, or "".
func unsupported(q string) string {
	words := strings.Fields(strings.ToLower(strings.Trim(q, " ?.!")))
	if len(words) == 0 {
		return ""
	}
	first := strings.Trim(words[0], ",:;")
	if first == "please" || first == "can" || first == "could" || first == "you" {
		for _, w := range words[1:] {
			if w != "you" && w != "please" {
				first = strings.Trim(w, ",:;")
				break
			}
		}
	}
	if slices.Contains(changeVerbs, first) {
		return first
	}
	return ""
}

// asksSelection reports whether a question is about the selected symbol.
func asksSelection(q string) bool {
	l := strings.ToLower(q)
	return !backticked.MatchString(q) && (strings.Contains(l, "selected") || strings.Contains(l, "selection"))
}

// selectedName is the first identifier of the editor's selection, or why
// there is none.
func (h *Host) selectedName(ctx context.Context, req pipe.Request) (string, string) {
	sel, err := h.selection(ctx, req)
	if err != nil {
		return "", "the selection could not be read: " + events.AsErr(err, "").Msg
	}
	m, _ := sel.(map[string]any)
	text, _ := m["text"].(string)
	if name := identRE.FindString(text); name != "" {
		return name, ""
	}
	if m == nil {
		return "", "nothing is selected: select the symbol in the editor (or name it: where is `Name` defined?)"
	}
	return "", fmt.Sprintf("the selection (%q) names no symbol", oneLine(text, 60))
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

func (h *Host) query(ctx context.Context, req pipe.Request) (any, error) {
	var a pipe.QueryArgs
	if err := decode(req, &a); err != nil {
		return nil, err
	}
	if verb := unsupported(a.Query); verb != "" {
		return QueryResult{Outcome: "unavailable", Message: fmt.Sprintf("ide_query reads code, it does not %s it: %s. To %s, propose the edit (propose_text_edit).", verb, queryForms, verb)}, nil
	}
	name := subject(a.Query)
	if asksSelection(a.Query) {
		var why string
		if name, why = h.selectedName(ctx, req); name == "" {
			return QueryResult{Outcome: "unavailable", Message: why}, nil
		}
	}
	if name == "" {
		return nil, &events.Err{Code: events.CodeInvalidArguments, Msg: "the question names no symbol: " + queryForms}
	}
	short := name[strings.LastIndex(name, ".")+1:] // pkg.Name: the server knows Name
	what := intent(a.Query)
	rid, _ := events.ParseID(req.RequestID)
	found, err := h.symbols(ctx, rid, short, "")
	if err != nil {
		if e := events.AsErr(err, ""); e.Code == events.CodeLanguageServerUnavailable {
			return QueryResult{Outcome: "unavailable", Message: e.Msg}, nil
		}
		return nil, err
	}
	var exact []Symbol
	for _, s := range found {
		// gopls names a method Type.Method.
		if s.Name == short || s.Name == name || strings.HasSuffix(s.Name, "."+short) || s.Container+"."+s.Name == name {
			exact = append(exact, s)
		}
	}
	exact = workspaceFirst(exact)
	switch len(exact) {
	case 0:
		return notFound(name, found, what), nil
	case 1:
	default:
		out := QueryResult{Outcome: "ambiguous", Message: fmt.Sprintf("%d symbols are named %s; ask about one of them", len(exact), name)}
		for _, s := range exact {
			out.Refinements = append(out.Refinements, refinement(s, what))
		}
		return out, nil
	}
	s := exact[0]
	at := pipe.PositionArgs{Path: s.Path, Line: s.Line, Column: s.Column}
	sub := pipe.Request{RequestID: req.RequestID, Payload: mustJSON(at)}
	switch what {
	case "hover":
		res, err := h.hover(ctx, sub)
		if err != nil {
			return nil, err
		}
		text := res.(map[string]any)["text"].(string)
		return QueryResult{Outcome: "success", Message: text, References: []string{s.Ref}, Locations: []Location{s.Location}}, nil
	case "references":
		res, err := h.positionCall("textDocument/references", map[string]any{"context": map[string]bool{"includeDeclaration": false}})(ctx, sub)
		if err != nil {
			return nil, err
		}
		locs := res.(map[string]any)["locations"].([]Location)
		out := QueryResult{Outcome: "success", Message: fmt.Sprintf("%s %s (%s) is used in %d place(s)", s.Kind, s.Name, s.Ref, len(locs)), Locations: locs}
		for _, l := range locs {
			out.References = append(out.References, l.Ref)
		}
		return out, nil
	}
	return QueryResult{Outcome: "success", Message: fmt.Sprintf("%s %s is defined at %s", s.Kind, s.Name, s.Ref), References: []string{s.Ref}, Locations: []Location{s.Location}}, nil
}

func mustJSON(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}

// notFound answers a name no symbol has: the close names the language
// server offered (its workspace/symbol search is fuzzy), the same name in
// another case first, each with the call that asks about it.
func notFound(name string, found []Symbol, what string) QueryResult {
	out := QueryResult{Outcome: "success", Message: fmt.Sprintf("no symbol named %s in the workspace (the language server knows none)", name)}
	near := workspaceFirst(slices.Clone(found))
	rank := func(s Symbol) int {
		switch n := strings.ToLower(s.Name); {
		case strings.EqualFold(s.Name, name) || strings.HasSuffix(n, "."+strings.ToLower(name)):
			return 0
		case strings.Contains(n, strings.ToLower(name)):
			return 1
		}
		return 2
	}
	slices.SortStableFunc(near, func(x, y Symbol) int { return rank(x) - rank(y) })
	var names []string
	for _, s := range near[:min(len(near), 5)] {
		names = append(names, fmt.Sprintf("%s (%s %s:%d)", s.Name, s.Kind, s.Path, s.Line))
		out.Refinements = append(out.Refinements, refinement(s, what))
	}
	if len(names) > 0 {
		out.Message += "; close names: " + strings.Join(names, ", ")
	}
	return out
}

// refinement is the call that asks what (references, hover, definition)
// about s.
func refinement(s Symbol, what string) Refinement {
	return Refinement{Label: fmt.Sprintf("%s %s in %s:%d", s.Kind, s.Name, s.Path, s.Line),
		Tool:      map[string]string{"references": "find_references", "hover": "hover", "definition": "find_definition"}[what],
		Arguments: map[string]any{"path": s.Path, "line": s.Line, "column": s.Column}}
}
