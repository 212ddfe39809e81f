package host

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListProjectsSkipsHiddenAndVendoredTrees(t *testing.T) {
	tr := newTree(t)
	files := []string{"go.mod", "web/package.json", "web/node_modules/dep/package.json", "svc/Cargo.toml",
		".git/config/go.mod", "vendor/x/go.mod", "tools/app.csproj", "py/pyproject.toml", "README.md"}
	for _, f := range files {
		p := filepath.Join(tr.root, filepath.FromSlash(f))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte("x"), 0o644)
	}
	os.Symlink(tr.outside, filepath.Join(tr.root, "escape")) // never followed out
	os.WriteFile(filepath.Join(tr.outside, "go.mod"), []byte("x"), 0o644)
	list, err := tr.ws.ListProjects()
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range list.Projects {
		got = append(got, p.Kind+":"+p.Manifest)
	}
	want := "go:go.mod python:py/pyproject.toml rust:svc/Cargo.toml dotnet:tools/app.csproj node:web/package.json"
	if strings.Join(got, " ") != want || list.Limited {
		t.Fatalf("projects:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
}

func TestParseDiagnostics(t *testing.T) {
	out := strings.Join([]string{
		"# example.com/m",
		"./main.go:12:5: undefined: foo",
		"vet: pkg/a.go:3: possible misuse of unsafe.Pointer",
		"src/x.c:7:2: warning: unused variable 'y' [-Wunused-variable]",
		"lib/y.ts(4,10): error TS2304: Cannot find name 'z'.",
		"https://example.com:443: not a file",
		"no position here",
		"a.go:0:1: line zero is not a line",
	}, "\n")
	got := parseDiagnostics(out)
	want := []Diagnostic{
		{File: "./main.go", Line: 12, Column: 5, Severity: "error", Message: "undefined: foo"},
		{File: "pkg/a.go", Line: 3, Severity: "error", Message: "possible misuse of unsafe.Pointer"},
		{File: "src/x.c", Line: 7, Column: 2, Severity: "warning", Message: "unused variable 'y' [-Wunused-variable]"},
		{File: "lib/y.ts", Line: 4, Column: 10, Severity: "error", Message: "TS2304: Cannot find name 'z'."},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d diagnostics: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("diagnostic %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

func FuzzParseDiagnostics(f *testing.F) {
	f.Add("./main.go:12:5: undefined: foo\nlib/y.ts(4,10): error TS2304: x")
	f.Fuzz(func(t *testing.T, out string) {
		ds := parseDiagnostics(out)
		if len(ds) > MaxDiagnostics {
			t.Fatal("more than the cap")
		}
		for _, d := range ds {
			if d.Line <= 0 || d.Message == "" || d.File == "" || (d.Severity != "error" && d.Severity != "warning" && d.Severity != "info") {
				t.Fatalf("bad diagnostic %+v", d)
			}
		}
	})
}
