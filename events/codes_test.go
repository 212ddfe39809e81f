package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// Every code declared in this package (codes.go and any other file) has an
// outcome and an action in the one table, and the table names no code that
// is not declared.
func TestEveryCodeHasAnOutcomeAndAnAction(t *testing.T) {
	names, _ := filepath.Glob("*.go")
	declared := map[Code]bool{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			vs, ok := n.(*ast.ValueSpec)
			if !ok {
				return true
			}
			if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Code" {
				return true
			}
			for _, v := range vs.Values {
				if lit, ok := v.(*ast.BasicLit); ok {
					declared[Code(lit.Value[1:len(lit.Value)-1])] = true
				}
			}
			return true
		})
	}
	if len(declared) < 40 {
		t.Fatalf("found %d declared codes; the declarations changed shape", len(declared))
	}
	for c := range declared {
		info, ok := codeTable[c]
		if !ok || info.action == "" || info.outcome == "" || info.outcome == OK {
			t.Errorf("code %s has no outcome or action in codeTable", c)
		}
	}
	for _, c := range Codes() {
		if !declared[c] {
			t.Errorf("codeTable names %s, which is not declared", c)
		}
	}
}
