package events

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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
	for _, c := range codes() {
		if !declared[c] {
			t.Errorf("codeTable names %s, which is not declared", c)
		}
	}
}

// Every code rates a call with a known severity and risk and refuses an
// HTTP request with a real status; the refusals by the UI's and the front
// door's access rules keep the statuses clients rely on.
func TestEveryCodeHasARatingAndAStatus(t *testing.T) {
	for _, c := range codes() {
		if s := SeverityOf(c); s != "warning" && s != "error" {
			t.Errorf("%s: severity %q", c, s)
		}
		if r := RiskOf(c); r != "low" && r != "medium" && r != "high" {
			t.Errorf("%s: risk %q", c, r)
		}
		if s := HTTPStatus(c); s < 400 || s > 599 {
			t.Errorf("%s: HTTP status %d", c, s)
		}
	}
	if SeverityOf("") != "info" || RiskOf("") != "low" {
		t.Error("no code: not info and low")
	}
	for c, want := range map[Code]int{CodeForeignHost: 421, CodeUnauthenticated: 401, CodeForeignOrigin: 403, CodeCSRFMismatch: 403,
		CodeMethodRefused: 405, CodeNotPending: 409, CodeHashChanged: 409, CodeInvalidArguments: 400, CodeTooLarge: 413,
		CodeMalformedFrame: 400, CodePipeUnavailable: 503, CodeDrift: 409} {
		if got := HTTPStatus(c); got != want {
			t.Errorf("%s: HTTP %d, want %d", c, got, want)
		}
	}
	for _, c := range codes() {
		if retryable(c) != (c == CodeHubUnavailable) {
			t.Errorf("%s: retryable %v", c, retryable(c))
		}
	}
}

// Every code is produced somewhere outside the table: a code nothing
// produces is a promise the tool never keeps.
func TestEveryCodeIsProduced(t *testing.T) {
	used := map[string]bool{}
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") && d.Name() != ".." || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Base(path) == "codes.go" && filepath.Base(filepath.Dir(path)) == "events" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range regexp.MustCompile(`\bCode[A-Z][A-Za-z]+\b`).FindAllString(string(b), -1) {
			used[m] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(used) < 40 {
		t.Fatalf("found %d codes in use; the walk missed the module", len(used))
	}
	for _, c := range codes() {
		if !used["Code"+string(c)] {
			t.Errorf("code %s is declared but nothing produces it", c)
		}
	}
}

// A hint is written for the AI client that gets the tool result: no
// command to run, no configuration to edit, no operator's tool — those are
// the action's, which stays in the evidence and the UI. Every code a tool
// call can end with has one.
func TestHintsAreForTheModel(t *testing.T) {
	operatorWords := regexp.MustCompile("`|tracebridge|\\[[a-z]+[\\].]|\\.toml|TRACEBRIDGE_")
	for _, c := range []Code{CodeUnknownTool, CodePolicyDenied, CodeApprovalDenied, CodeApprovalTimeout, CodeSecretUnresolved,
		CodePipeUnavailable, CodePipeTimeout, CodeDrift, CodeAmbiguous, CodeApplyInterrupted, CodeInvalidArguments, CodeConfigInvalid,
		CodeToolError, CodeToolPanic, CodeToolTimeout, CodePathRefused, CodeUpstreamUnavailable, CodeUpstreamTimeout, CodeUpstreamError,
		CodeUpstreamProtocol, CodeUpstreamUnauthorized, CodeToolChanged, CodeLogUnavailable} {
		if HintFor(c) == "" {
			t.Errorf("%s: no hint for the client", c)
		}
	}
	for _, c := range codes() {
		if h := HintFor(c); operatorWords.MatchString(h) {
			t.Errorf("%s: the hint %q tells the model what only the operator can do", c, h)
		}
	}
}
