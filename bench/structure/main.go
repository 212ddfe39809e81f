// Command structure prints the figures the structure pass is judged by:
// files and lines per package, functions over 80 lines, functions over a
// cyclomatic complexity of 15 and 25, exported names, and test/code lines;
// -check holds the tree to the structure rules and exits 1 naming
// what breaks them (its test does the same in `make test`).
//
//	go run ./bench/structure [-v] [-check] [dir]
//
// Cyclomatic complexity is gocyclo's: 1 + if, for, range, case (not
// default), comm clause, && and ||. Lines count everything in the file.
package main

import (
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

type pkg struct {
	files, code, test, exported int
}

type fn struct {
	name         string
	lines, cyclo int
}

// file is a non-test Go file and its line count.
type file struct {
	path  string
	lines int
}

// The structure rules (ADR 0018, issue 42), which TestTreeKeepsToTheRules
// holds the tree to: no function over a cyclomatic complexity of MaxCyclo
// anywhere, no function of cmd/ over MaxCmdLines lines (cmd is wiring and
// printing), no non-test file over MaxFileLines lines (split it along its
// seams).
const (
	MaxCyclo     = 25
	MaxCmdLines  = 80
	MaxFileLines = 600
)

// rules lists what breaks the structure rules, one line each.
func rules(fns []fn, files []file) []string {
	var out []string
	for _, f := range fns {
		if f.cyclo > MaxCyclo {
			out = append(out, fmt.Sprintf("%s: cyclomatic complexity %d, over %d: split it", f.name, f.cyclo, MaxCyclo))
		}
		if strings.HasPrefix(f.name, "cmd/") && f.lines > MaxCmdLines {
			out = append(out, fmt.Sprintf("%s: %d lines, over %d in cmd (wiring and printing only): move the work into its package", f.name, f.lines, MaxCmdLines))
		}
	}
	for _, f := range files {
		if f.lines > MaxFileLines {
			out = append(out, fmt.Sprintf("%s: %d lines, over %d: split it along its seams", f.path, f.lines, MaxFileLines))
		}
	}
	sort.Strings(out)
	return out
}

func main() {
	verbose := flag.Bool("v", false, "list the long and complex functions")
	check := flag.Bool("check", false, "hold the tree to the structure rules; exit 1 naming what breaks them")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	pkgs, fns, files, err := measure(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "structure:", err)
		os.Exit(1)
	}
	if *check {
		broken := rules(fns, files)
		for _, b := range broken {
			fmt.Println(b)
		}
		if len(broken) > 0 {
			os.Exit(1)
		}
		return
	}
	report(pkgs, fns, *verbose)
}

func measure(root string) (map[string]*pkg, []fn, []file, error) {
	pkgs := map[string]*pkg{}
	var fns []fn
	var files []file
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skip(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, path, src, 0)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		p := pkgs[dir]
		if p == nil {
			p = &pkg{}
			pkgs[dir] = p
		}
		p.files++
		lines := strings.Count(string(src), "\n")
		if strings.HasSuffix(path, "_test.go") {
			p.test += lines
			return nil
		}
		p.code += lines
		rel, _ := filepath.Rel(root, path)
		files = append(files, file{path: filepath.ToSlash(rel), lines: lines})
		fns = append(fns, decls(fset, filepath.ToSlash(dir), f, p)...)
		return nil
	})
	return pkgs, fns, files, err
}

// skip names the folders that hold no package of the module: hidden ones,
// test data, build output and the peers benchmark (its own module).
func skip(name string) bool {
	return strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata" || name == "peers" || name == "out"
}

// decls counts a file's exported names into p and returns its functions.
func decls(fset *token.FileSet, dir string, f *ast.File, p *pkg) []fn {
	var fns []fn
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if d.Name.IsExported() {
				p.exported++
			}
			if d.Body == nil {
				continue
			}
			name := dir + "." + d.Name.Name
			if d.Recv != nil && len(d.Recv.List) > 0 {
				name = dir + ".(" + recv(d.Recv.List[0].Type) + ")." + d.Name.Name
			}
			fns = append(fns, fn{name: name,
				lines: fset.Position(d.End()).Line - fset.Position(d.Pos()).Line + 1,
				cyclo: cyclo(d.Body)})
		case *ast.GenDecl:
			p.exported += exportedSpecs(d)
		}
	}
	return fns
}

func exportedSpecs(d *ast.GenDecl) int {
	n := 0
	for _, s := range d.Specs {
		switch s := s.(type) {
		case *ast.TypeSpec:
			if s.Name.IsExported() {
				n++
			}
		case *ast.ValueSpec:
			for _, name := range s.Names {
				if name.IsExported() {
					n++
				}
			}
		}
	}
	return n
}

func report(pkgs map[string]*pkg, fns []fn, verbose bool) {
	dirs := make([]string, 0, len(pkgs))
	for d := range pkgs {
		dirs = append(dirs, d)
	}
	sort.Strings(dirs)
	var all pkg
	fmt.Printf("%-24s %5s %6s %6s %9s %8s\n", "package", "files", "code", "test", "test/code", "exported")
	for _, d := range dirs {
		p := pkgs[d]
		all.files += p.files
		all.code += p.code
		all.test += p.test
		all.exported += p.exported
		fmt.Printf("%-24s %5d %6d %6d %9s %8d\n", d, p.files, p.code, p.test, ratio(p.test, p.code), p.exported)
	}
	fmt.Printf("%-24s %5d %6d %6d %9s %8d\n", "all", all.files, all.code, all.test, ratio(all.test, all.code), all.exported)
	var long, over15, over25 []fn
	for _, f := range fns {
		if f.lines > 80 {
			long = append(long, f)
		}
		if f.cyclo > 15 {
			over15 = append(over15, f)
		}
		if f.cyclo > 25 {
			over25 = append(over25, f)
		}
	}
	fmt.Printf("functions %d, over 80 lines %d, cyclomatic over 15 %d, over 25 %d\n", len(fns), len(long), len(over15), len(over25))
	if verbose {
		sort.Slice(over15, func(i, j int) bool { return over15[i].cyclo > over15[j].cyclo })
		for _, f := range over15 {
			fmt.Printf("  cyclo %3d  lines %4d  %s\n", f.cyclo, f.lines, f.name)
		}
		for _, f := range long {
			if f.cyclo <= 15 {
				fmt.Printf("  cyclo %3d  lines %4d  %s\n", f.cyclo, f.lines, f.name)
			}
		}
	}
}

func ratio(a, b int) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

func recv(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return "*" + recv(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recv(t.X)
	case *ast.IndexListExpr:
		return recv(t.X)
	}
	return "?"
}

// cyclo counts decision points the way gocyclo does, including those of
// function literals inside the body.
func cyclo(body *ast.BlockStmt) int {
	n := 1
	ast.Inspect(body, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil {
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil {
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}
