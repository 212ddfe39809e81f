package guard

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Tool is what the guard reads of a tool's descriptor: all the text a
// client shows the model.
type Tool struct {
	Server      string
	Name        string
	Title       string
	Description string
	// Schema is the input schema (JSON): its property descriptions,
	// titles and enum texts are read too.
	Schema json.RawMessage
}

// Neighbour is another server's tool, for the shadowing rule.
type Neighbour struct{ Server, Name string }

// precedence is a description claiming to replace or outrank other tools.
var precedence = regexp.MustCompile(`\b(prefer(red)? (this|it|me)|(use|call) this (tool )?(instead|rather)|instead of (the |any )?(other|another|built-in|original)|rather than (the |any )?(other|another)|in place of (the |any )?(other|another)|(replaces|supersedes|overrides) (the |any |all )?(other|another|existing|original)|(do not|don't|never) use (the |any )?(other|another)|(other|another) (server'?s? )?(tools?|version) (is|are) (deprecated|broken|unsafe|outdated))\b`)

// Descriptor judges t when first seen or changed: invisible characters,
// instructions aimed at the model, exfiltration phrasing, and shadowing of
// a neighbour (another server's tool with its name, or named by it).
func Descriptor(t Tool, neighbours []Neighbour, act Actions) []Finding {
	f := &finder{act: act}
	texts := descriptorTexts(t)
	for _, tx := range texts {
		if f.on("tool-invisible-text") {
			if found, _ := Invisible(tx.text); found != nil {
				f.add("tool-invisible-text", "invisible characters "+strings.Join(found, " ")+" in the "+tx.where, visibleAround(tx.text), tx.where)
			}
		}
		if f.on("tool-instructions") {
			if why, trig := suspicious(instructions, tx.text); why != "" {
				f.add("tool-instructions", "the "+tx.where+" "+why, trig, tx.where)
			}
		}
		if f.on("tool-exfiltration") {
			if why, trig := suspicious(exfiltration, tx.text); why != "" {
				f.add("tool-exfiltration", "the "+tx.where+" "+why, trig, tx.where)
			}
		}
	}
	if f.on("tool-shadowing") {
		shadowing(f, t, neighbours)
	}
	return f.out
}

// shadowing flags t when it has another server's tool's name and claims
// precedence, or names another server's tool (a distinctive name: with a
// separator) in its description.
func shadowing(f *finder, t Tool, neighbours []Neighbour) {
	desc := Fold(t.Title + " " + t.Description)
	for _, n := range neighbours {
		if n.Server == t.Server {
			continue
		}
		if n.Name == t.Name {
			if m := precedence.FindString(desc); m != "" {
				f.add("tool-shadowing", "has the name of server "+n.Server+"'s tool "+n.Name+" and claims precedence over it", m, "description")
				return
			}
			continue
		}
		if distinctive(n.Name) && n.Name != t.Name && containsWord(desc, strings.ToLower(n.Name)) && !slices.Contains(ownWords(t), strings.ToLower(n.Name)) {
			f.add("tool-shadowing", "names server "+n.Server+"'s tool "+n.Name+" in its description", n.Name, "description")
			return
		}
	}
}

// ownWords are names t itself declares (its properties), which its
// description may use whatever other servers call their tools.
func ownWords(t Tool) []string {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	json.Unmarshal(t.Schema, &s)
	var out []string
	for k := range s.Properties {
		out = append(out, strings.ToLower(k))
	}
	return out
}

// distinctive reports whether a tool name is unlikely in prose: it has a
// separator and some length (read_file, create_issue; not "search").
func distinctive(name string) bool {
	return len(name) >= 6 && strings.ContainsAny(name, "_-.")
}

func containsWord(s, w string) bool {
	for from := 0; ; {
		i := strings.Index(s[from:], w)
		if i < 0 {
			return false
		}
		a, b := from+i, from+i+len(w)
		if (a == 0 || !wordByte(s[a-1])) && (b == len(s) || !wordByte(s[b])) {
			return true
		}
		from = b
	}
}

func wordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c >= 'A' && c <= 'Z'
}

type located struct{ where, text string }

// descriptorTexts is every text of t a model reads: title, description,
// and the schema's descriptions, titles, defaults, examples and enums.
func descriptorTexts(t Tool) []located {
	out := []located{{"title", t.Title}, {"description", t.Description}}
	var schema any
	if json.Unmarshal(t.Schema, &schema) == nil {
		walkStrings(schema, "inputSchema", func(where, s string) {
			out = append(out, located{where, s})
		})
	}
	// The tool's name is read too: a name can carry invisible characters.
	return append(out, located{"name", t.Name})
}

// walkStrings calls fn with every string in v (a decoded JSON value) and
// where it is; map keys are visited too.
func walkStrings(v any, where string, fn func(where, s string)) {
	switch x := v.(type) {
	case string:
		fn(where, x)
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			fn(where+" key", k)
			walkStrings(x[k], where+"."+k, fn)
		}
	case []any:
		for i, e := range x {
			walkStrings(e, where+"["+strconv.Itoa(i)+"]", fn)
		}
	}
}

// visibleAround shows where the invisible characters are: the text with
// each one as ⟦U+XXXX⟧.
func visibleAround(s string) string {
	var b strings.Builder
	for i, r := range s {
		if invisible(s, i, r) {
			b.WriteString("⟦" + runeName(r) + "⟧")
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
