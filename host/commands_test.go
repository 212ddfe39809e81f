package host

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/pipe"
)

// The commands in pipe/commands.go, the host's handlers and the
// table in docs/pipe-protocol.md (what an editor extension implements)
// name the same commands.
func TestEveryCommandIsAnsweredAndDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "pipe", "commands.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var constants []string
	ast.Inspect(f, func(n ast.Node) bool {
		if v, ok := n.(*ast.ValueSpec); ok {
			for _, val := range v.Values {
				if lit, ok := val.(*ast.BasicLit); ok {
					s, _ := strconv.Unquote(lit.Value)
					constants = append(constants, s)
				}
			}
		}
		return true
	})
	var handled []string
	for name := range (&Host{}).Handlers() {
		handled = append(handled, name)
	}
	doc, err := os.ReadFile(filepath.Join("..", "docs", "pipe-protocol.md"))
	if err != nil {
		t.Fatal(err)
	}
	// The host's commands are the table before "## Editors"; that section's
	// table is what the host asks an editor.
	hostPart, editorPart, ok := strings.Cut(string(doc), "\n## Editors\n")
	if !ok || !strings.Contains(editorPart, "| `"+pipe.CmdEditorApplyEdit+"` |") {
		t.Fatalf("docs/pipe-protocol.md lacks the Editors section documenting %s", pipe.CmdEditorApplyEdit)
	}
	var documented []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_.]+)` \\| `").FindAllStringSubmatch(hostPart, -1) {
		documented = append(documented, m[1])
	}
	slices.Sort(constants)
	slices.Sort(handled)
	slices.Sort(documented)
	if len(constants) < 10 || !slices.Equal(constants, handled) || !slices.Equal(constants, documented) {
		t.Fatalf("commands differ:\nconstants  %v\nhandled    %v\ndocumented %v", constants, handled, documented)
	}
}
