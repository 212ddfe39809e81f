package host

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// hostileWorkspace writes files into a new workspace and returns it with
// the path of a marker that code from the workspace would write.
func hostileWorkspace(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	marker := filepath.Join(t.TempDir(), "RAN")
	for name, text := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "MARKER", marker)), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir, marker
}

func noMarker(t *testing.T, marker string) {
	t.Helper()
	if b, err := os.ReadFile(marker); err == nil {
		t.Fatalf("code the workspace supplied ran: %s", b)
	}
}

func langAsk(t *testing.T, dir string, langs []Language, cmd string, payload any) (json.RawMessage, error) {
	t.Helper()
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	h := &Host{WS: ws, Rec: storetest.Open(t).Emitter, LanguageServers: langs}
	t.Cleanup(func() { h.Close(); ws.Close() })
	return call(t, h, cmd, payload)
}

// F-L1: a repository that ships its own node_modules/typescript does not
// get it run by a read-only document_symbols: typescript-language-server
// runs the TypeScript installed beside it, and answers.
func TestWorkspaceTypeScriptDoesNotRun(t *testing.T) {
	cmd := tsls(t)
	dir, marker := hostileWorkspace(t, map[string]string{
		"package.json":                         `{"name":"demo","version":"1.0.0"}`,
		"tsconfig.json":                        `{"compilerOptions":{"strict":true}}`,
		"a.ts":                                 "export function validateToken(t: string): boolean { return t.length > 0 }\n",
		"node_modules/typescript/package.json": `{"name":"typescript","version":"5.9.3","main":"lib/typescript.js"}`,
		"node_modules/typescript/lib/typescript.js": "// stub\n",
		"node_modules/typescript/lib/tsserver.js":   `require("fs").writeFileSync("MARKER", "tsserver.js of the workspace"); process.exit(1);` + "\n",
		"node_modules/typescript/lib/_tsserver.js":  `require("fs").writeFileSync("MARKER", "_tsserver.js of the workspace"); process.exit(1);` + "\n",
		"node_modules/.bin/tsserver":                "#!/bin/sh\necho bin > MARKER\n",
	})
	ts := Language{Name: "typescript", Command: cmd, Extensions: []string{".ts"}, Markers: []string{"tsconfig.json"}, LanguageID: "typescript", Timeout: time.Minute}
	out, err := langAsk(t, dir, []Language{ts}, "lsp.document_symbols", pipe.DocumentArgs{Path: "a.ts"})
	noMarker(t, marker)
	if err != nil || !strings.Contains(string(out), "validateToken") {
		t.Fatalf("document_symbols with the pinned TypeScript: %s %v", out, err)
	}
	// The operator may name a tsserver; one inside the workspace is refused
	// before anything starts.
	ts.TSServer = filepath.Join(dir, "node_modules", "typescript", "lib", "tsserver.js")
	_, err = langAsk(t, dir, []Language{ts}, "lsp.document_symbols", pipe.DocumentArgs{Path: "a.ts"})
	noMarker(t, marker)
	if events.CodeOf(err) != events.CodeLanguageServerUnavailable || !strings.Contains(err.Error(), "inside the workspace") {
		t.Fatalf("a tsserver inside the workspace: %v", err)
	}
}

// A typescript-language-server with no TypeScript beside it is not started
// (it would take the workspace's): the refusal says what to install or set.
func TestTypeScriptWithoutItsOwnTypeScriptIsRefused(t *testing.T) {
	bin := t.TempDir()
	os.WriteFile(filepath.Join(bin, "typescript-language-server"), []byte("#!/bin/sh\necho started > "+filepath.Join(bin, "STARTED")+"\n"), 0o755)
	ld, err := lockDown(Language{Name: "typescript", Command: []string{filepath.Join(bin, "typescript-language-server"), "--stdio"}}, t.TempDir(), nil)
	if events.CodeOf(err) != events.CodeLanguageServerUnavailable || !strings.Contains(err.Error(), "--tsserver-path") || ld.InitOptions != nil {
		t.Fatalf("no TypeScript beside the server: %+v %v", ld, err)
	}
}

// F-L1 for gopls: a go.mod naming another toolchain (found on PATH, as with
// GOTOOLCHAIN=path, or downloaded), and a cgo directive naming a pkg-config
// package, run nothing; the harmless twin (the same module without them)
// answers as before.
func TestWorkspaceGoToolchainDoesNotRun(t *testing.T) {
	gp := gopls(t)
	bin := t.TempDir()
	marker := filepath.Join(bin, "RAN")
	for _, name := range []string{"go1.99.0", "pkg-config"} {
		os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\necho "+name+" ran >> "+marker+"\nexit 1\n"), 0o755)
	}
	t.Setenv("PATH", bin+string(filepath.ListSeparator)+os.Getenv("PATH"))
	t.Setenv("GOTOOLCHAIN", "path") // the user's own setting: switch to a toolchain on PATH
	t.Setenv("CGO_ENABLED", "1")
	dir, _ := hostileWorkspace(t, map[string]string{
		"go.mod": "module example.com/m\n\ngo 1.26\n\ntoolchain go1.99.0\n",
		"a.go":   goA,
		"c.go":   "package m\n\n// #cgo pkg-config: evil\nimport \"C\"\n\nvar _ = C.int(0)\n",
	})
	langs := []Language{{Name: "go", Command: []string{gp}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}}
	out, err := langAsk(t, dir, langs, "lsp.document_symbols", pipe.DocumentArgs{Path: "a.go"})
	time.Sleep(2 * time.Second) // gopls loads the package in the background too
	noMarker(t, marker)
	if err != nil || !strings.Contains(string(out), "ValidateToken") {
		t.Fatalf("document_symbols: %s %v", out, err)
	}
}

// The server's environment: the toolchain held, cgo off, PATH without what
// the workspace could supply; everything else kept.
func TestServerEnv(t *testing.T) {
	root := t.TempDir()
	env := serverEnv([]string{"HOME=/home/u", "GOTOOLCHAIN=auto", "PATH=node_modules/.bin:/usr/bin:" + root + "/bin:.:/usr/local/bin", "CGO_ENABLED=1"}, rootsOf(root))
	want := "HOME=/home/u PATH=/usr/bin:/usr/local/bin GOTOOLCHAIN=local CGO_ENABLED=0"
	if got := strings.Join(env, " "); got != want {
		t.Fatalf("env:\n got %s\nwant %s", got, want)
	}
}

// F-L3: a workspace symlink to a Go file outside the root is read by gopls
// as part of the package; the host does not pass on what it read there: a
// hover quoting its declaration is PathRefused (as workspace.file refuses
// the symlink), and definitions drop the location. The twin: the same
// package with keys.go a regular file answers the hover.
func TestLanguageAnswersDoNotQuoteFilesOutsideTheRoot(t *testing.T) {
	gp := gopls(t)
	main := "package m\n\nfunc Use() string { return Key }\n"
	for _, symlinked := range []bool{true, false} {
		outside := filepath.Join(t.TempDir(), "keys.go")
		os.WriteFile(outside, []byte("package m\n\nconst Key = \"OUTSIDE-SECRET-4242\"\n"), 0o644)
		dir, _ := hostileWorkspace(t, map[string]string{"go.mod": "module example.com/m\n\ngo 1.26\n", "main.go": main})
		if symlinked {
			if err := os.Symlink(outside, filepath.Join(dir, "keys.go")); err != nil {
				t.Fatal(err)
			}
		} else {
			b, _ := os.ReadFile(outside)
			os.WriteFile(filepath.Join(dir, "keys.go"), b, 0o644)
		}
		langs := []Language{{Name: "go", Command: []string{gp}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}}
		ws, err := OpenWorkspace(dir)
		if err != nil {
			t.Fatal(err)
		}
		h := &Host{WS: ws, Rec: storetest.Open(t).Emitter, LanguageServers: langs}
		at := pipe.PositionArgs{Path: "main.go", Line: 3, Column: 28}
		hover, herr := call(t, h, "lsp.hover", at)
		def, derr := call(t, h, "lsp.definition", at)
		h.Close()
		ws.Close()
		if symlinked {
			if events.CodeOf(herr) != events.CodePathRefused || strings.Contains(string(hover), "OUTSIDE-SECRET") {
				t.Fatalf("hover through a symlink to outside: %s %v", hover, herr)
			}
			if derr != nil || strings.Contains(string(def), "keys.go") {
				t.Fatalf("definition through a symlink to outside: %s %v", def, derr)
			}
			continue
		}
		if herr != nil || !strings.Contains(string(hover), "OUTSIDE-SECRET-4242") || !strings.Contains(string(def), "keys.go") {
			t.Fatalf("the twin with a regular keys.go: hover %s %v, definition %s %v", hover, herr, def, derr)
		}
	}
}
