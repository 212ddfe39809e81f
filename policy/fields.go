package policy

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	celast "github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
)

// Fields checks rule name's args.FIELD paths against the input schemas
// (JSON, by tool id) of the tools it applies to: for a field none of them
// has it returns the field and why (the rule would fail, and deny, on every
// call). Tools whose schema is not known are not checked.
func Fields(name string, r Rule, schemas map[string]json.RawMessage) []string {
	var problems []string
	cr, errs := compile(name, r)
	if len(errs) > 0 || cr.ast == nil {
		return nil
	}
	var tools []string
	for id := range schemas {
		if cr.appliesTo(id) {
			tools = append(tools, id)
		}
	}
	if len(tools) == 0 {
		return nil
	}
	slices.Sort(tools)
	seen := map[string]bool{}
	for _, p := range argsPaths(cr.ast.NativeRep().Expr()) {
		key := strings.Join(p, ".")
		if seen[key] {
			continue
		}
		seen[key] = true
		var missing []string
		for _, id := range tools {
			if at, lacks := schemaLacks(schemas[id], p); lacks {
				missing = append(missing, fmt.Sprintf("%s (its %s has %s)", id, at, fieldList(schemas[id], p)))
			}
		}
		if len(missing) == len(tools) {
			problems = append(problems, fmt.Sprintf("args.%s: no tool the rule applies to has it in its input schema: %s", key, strings.Join(missing, "; ")))
		}
	}
	return problems
}

// argsPaths is every args.a.b (or args["a"]) path expr reads.
func argsPaths(expr celast.Expr) [][]string {
	var out [][]string
	celast.PostOrderVisit(expr, celast.NewExprVisitor(func(e celast.Expr) {
		if p, ok := argsPath(e); ok && len(p) > 0 {
			out = append(out, p)
		}
	}))
	return out
}

func argsPath(e celast.Expr) ([]string, bool) {
	switch e.Kind() {
	case celast.IdentKind:
		return nil, e.AsIdent() == "args"
	case celast.SelectKind:
		s := e.AsSelect()
		base, ok := argsPath(s.Operand())
		return append(slices.Clone(base), s.FieldName()), ok
	case celast.CallKind:
		c := e.AsCall()
		if c.FunctionName() != operators.Index || len(c.Args()) != 2 || c.Args()[1].Kind() != celast.LiteralKind {
			return nil, false
		}
		lit, isString := c.Args()[1].AsLiteral().(types.String)
		if !isString {
			return nil, false
		}
		base, ok := argsPath(c.Args()[0])
		return append(slices.Clone(base), string(lit)), ok
	}
	return nil, false
}

// schemaLacks reports whether the JSON schema has no property at p, and
// where the missing field would be ("input schema", or "property a.b"). A
// schema that does not list an object's properties allows any field.
func schemaLacks(schema json.RawMessage, p []string) (string, bool) {
	var node map[string]any
	if json.Unmarshal(schema, &node) != nil {
		return "", false
	}
	for i, seg := range p {
		props, ok := node["properties"].(map[string]any)
		if !ok {
			return "", false
		}
		child, ok := props[seg].(map[string]any)
		if !ok {
			if i == 0 {
				return "input schema", true
			}
			return "property " + strings.Join(p[:i], "."), true
		}
		node = child
	}
	return "", false
}

// fieldList is the fields the schema has where p leaves it.
func fieldList(schema json.RawMessage, p []string) string {
	var node map[string]any
	json.Unmarshal(schema, &node)
	for _, seg := range p {
		props, _ := node["properties"].(map[string]any)
		next, ok := props[seg].(map[string]any)
		if !ok {
			return strings.Join(slices.Sorted(maps.Keys(props)), ", ")
		}
		node = next
	}
	return ""
}
