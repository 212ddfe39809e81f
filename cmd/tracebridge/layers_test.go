package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/tracebridge/tracebridge/"

// TestLayersReadBottomUp: every package of the module imports only
// packages of its own layer or below, as docs/ARCHITECTURE.md's package
// table says, and that table is true: it lists every package, and each
// row's imports column is exactly what the package imports (go list).
func TestLayersReadBottomUp(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| (\\d+) [a-z]+ \\| `([a-z/]+)` \\| [^\\n]*\\| ([^|\\n]+) \\|$")
	layer := map[string]int{}
	documented := map[string][]string{}
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		n, _ := strconv.Atoi(m[1])
		layer[m[2]] = n
		documented[m[2]] = nil
		for _, imp := range strings.Split(m[3], ",") {
			if imp = strings.Trim(strings.TrimSpace(imp), "`"); imp != "—" && imp != "" {
				documented[m[2]] = append(documented[m[2]], imp)
			}
		}
	}
	if len(layer) < 10 {
		t.Fatalf("docs/ARCHITECTURE.md: found %d package rows; the table's shape changed", len(layer))
	}
	cmd := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "./...")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], module)
		seen[pkg] = true
		own, ok := layer[pkg]
		if !ok {
			t.Errorf("package %s is not in docs/ARCHITECTURE.md's package table: give it a layer", pkg)
			continue
		}
		var imports []string
		for _, imp := range fields[1:] {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			imp = strings.TrimPrefix(imp, module)
			imports = append(imports, imp)
			if l, ok := layer[imp]; ok && l > own {
				t.Errorf("%s (layer %d) imports %s (layer %d): a lower layer must not import a higher one", pkg, own, imp, l)
			}
		}
		slices.Sort(imports)
		want := slices.Clone(documented[pkg])
		slices.Sort(want)
		if !slices.Equal(imports, want) {
			t.Errorf("docs/ARCHITECTURE.md says %s imports %v; it imports %v", pkg, want, imports)
		}
	}
	for pkg := range layer {
		if !seen[pkg] {
			t.Errorf("docs/ARCHITECTURE.md lists %s, which does not exist", pkg)
		}
	}
}

// TestDocsNameWhatExists: every package, folder or Go file of this module
// that docs/ARCHITECTURE.md, docs/EXTENDING.md or README.md names in
// backticks exists.
func TestDocsNameWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	path := regexp.MustCompile("`((?:bench|bridge|cmd|config|events|export|host|hub|internal|mermaid|pipe|policy|projections|replay|sessions|store|web)(?:/[A-Za-z0-9_.-]+)*/?)`")
	for _, doc := range []string{"docs/ARCHITECTURE.md", "docs/EXTENDING.md", "docs/LIFE.md", "README.md"} {
		b, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range path.FindAllStringSubmatch(string(b), -1) {
			p := strings.TrimSuffix(m[1], "/")
			if !strings.Contains(p, "/") && !strings.HasSuffix(m[1], "/") {
				continue // a bare word (`events`, `export`) may be a command or a kind, not a folder
			}
			last := p[strings.LastIndex(p, "/")+1:]
			if dot := strings.Index(last, "."); dot >= 0 && !strings.HasSuffix(last, ".go") {
				if rest := last[dot+1:]; rest == "" || rest[0] < 'A' || rest[0] > 'Z' {
					continue // a file in a data dir (export/otlp.json), not the module's
				}
				p = p[:len(p)-len(last)+dot] // pkg.Symbol: the package
			}
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names %s, which does not exist", doc, m[1])
			}
		}
	}
}

// TestPackageTableNamesWhatExists: every Go name the package table quotes
// for a package (`Name`, or `Type.Method`) is declared in that package, so
// the table does not drift from the code it describes.
func TestPackageTableNamesWhatExists(t *testing.T) {
	root := filepath.Join("..", "..")
	doc, err := os.ReadFile(filepath.Join(root, "docs", "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| \\d+ [a-z]+ \\| `([a-z/]+)` \\| ([^\\n]*)\\| [^|\\n]+ \\|$")
	name := regexp.MustCompile("`([A-Z][A-Za-z0-9]*)(?:\\.([A-Z][A-Za-z0-9]*))?(?:\\(\\))?`")
	checked := 0
	for _, m := range row.FindAllStringSubmatch(string(doc), -1) {
		pkg, text := m[1], m[2]
		src := declaredNames(t, filepath.Join(root, pkg))
		for _, n := range name.FindAllStringSubmatch(text, -1) {
			want := n[1]
			if n[2] != "" {
				want = n[1] + "." + n[2]
			}
			if strings.ToUpper(want) == want {
				continue // a file name (SHA256SUMS), not a Go name
			}
			checked++
			if !src[want] && !src["."+want] {
				t.Errorf("docs/ARCHITECTURE.md's row for %s names `%s`, which %s does not declare", pkg, want, pkg)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d names: the table's shape changed", checked)
	}
}

// declaredNames is every top-level name a package's non-test files
// declare, and Type.Method for each method.
func declaredNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fset := token.NewFileSet()
	files, _ := filepath.Glob(filepath.Join(dir, "*.go"))
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv != nil && len(d.Recv.List) > 0 {
					typ := d.Recv.List[0].Type
					if s, ok := typ.(*ast.StarExpr); ok {
						typ = s.X
					}
					if g, ok := typ.(*ast.IndexExpr); ok {
						typ = g.X
					}
					if id, ok := typ.(*ast.Ident); ok {
						out[id.Name+"."+d.Name.Name] = true
					}
					out["."+d.Name.Name] = true // a method named by itself (`Verify`)
					continue
				}
				out[d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						out[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fld := range st.Fields.List {
								for _, n := range fld.Names {
									out[s.Name.Name+"."+n.Name] = true
								}
							}
						}
						if it, ok := s.Type.(*ast.InterfaceType); ok {
							for _, m := range it.Methods.List {
								for _, n := range m.Names {
									out[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							out[n.Name] = true
						}
					}
				}
			}
		}
	}
	return out
}
