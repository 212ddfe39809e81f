package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
)

// Through equals direct: find_references through the bridge and the host
// answers what gopls answers directly (its own CLI, same workspace, same
// run); the session re-drives offline with no gopls anywhere.
func TestLanguageToolsThroughTheBridge(t *testing.T) {
	long(t)
	gopls := testenv.Gopls(t)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(filepath.Join(ws, "auth"), 0o755)
	files := map[string]string{
		"go.mod":        "module example.com/app\n\ngo 1.26\n",
		"auth/token.go": "package auth\n\n// ValidateToken reports whether t is a token.\nfunc ValidateToken(t string) bool { return len(t) > 8 }\n",
		"main.go":       "package main\n\nimport \"example.com/app/auth\"\n\nfunc main() {\n\tif !auth.ValidateToken(\"x\") {\n\t\tpanic(auth.ValidateToken(\"y\"))\n\t}\n}\n",
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(ws, name), []byte(text), 0o644)
	}
	cfg := writeConfig(t, fmt.Sprintf("[lsp.go]\ncommand = [%q]\ntimeout = \"1m\"\n", gopls))
	h := start(t, tbBin, data, "host", "--root", ws, "--config", strings.TrimPrefix(cfg, "TRACEBRIDGE_CONFIG="))
	eventually(t, 10*time.Second, "the host socket", func() bool {
		_, err := os.Stat(filepath.Join(data, "run", "host.sock"))
		return err == nil
	})
	b := startBridge(t, tbBin, data, "2025-06-18")
	res, req, code := b.call(t, "find_references", map[string]any{"path": "auth/token.go", "line": 4, "column": 6})
	if code != "" {
		t.Fatalf("find_references: %s %s", code, textOf(res))
	}
	var through struct {
		Locations []struct {
			Path         string
			Line, Column int
		}
	}
	json.Unmarshal([]byte(textOf(res)), &through)
	var got []string
	for _, l := range through.Locations {
		got = append(got, fmt.Sprintf("%s:%d:%d", l.Path, l.Line, l.Column))
	}
	// gopls directly: `gopls references -d FILE:LINE:COL` prints
	// path:line:col-col, one per line.
	direct := exec.Command(gopls, "references", "-d", filepath.Join(ws, "auth", "token.go")+":4:6")
	direct.Dir = ws
	out, err := direct.CombinedOutput()
	if err != nil {
		t.Fatalf("gopls references: %v\n%s", err, out)
	}
	var want []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		l = strings.TrimPrefix(l, ws+string(filepath.Separator))
		if i := strings.LastIndex(l, "-"); i > 0 {
			l = l[:i]
		}
		want = append(want, l)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) || len(want) != 3 {
		t.Fatalf("find_references through tracebridge %v, gopls directly %v", got, want)
	}
	if res, _, code := b.call(t, "find_symbol", map[string]any{"query": "ValidateToken"}); code != "" || !strings.Contains(textOf(res), `"ref":"[auth/token.go:4][]"`) {
		t.Fatalf("find_symbol: %s %s", code, textOf(res))
	}
	evs := requestEventsLive(t, b, req)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if !slices.Contains(kinds, events.KindLSPRequest) || !slices.Contains(kinds, events.KindLSPResponse) {
		t.Fatalf("the request's events hold no language-server crossing: %v", kinds)
	}
	// Offline: the recording answers for the host and its language server.
	sid := evs[0].SessionID.String()
	export, err := exec.Command(tbBin, "--data", data, "session", "export", sid, "-o", "-").Output()
	if err != nil {
		t.Fatalf("session export: %v", err)
	}
	h.cmd.Process.Signal(os.Interrupt)
	h.wait(t, 10*time.Second)
	file := filepath.Join(t.TempDir(), "lsp.jsonl")
	os.WriteFile(file, export, 0o600)
	redrive := exec.Command(tbBin, "session", "replay", file)
	redrive.Env = append(os.Environ(), "PATH=", "TB_GOPLS=")
	if out, err := redrive.CombinedOutput(); err != nil || !strings.Contains(string(out), "no drift") {
		t.Fatalf("re-drive without gopls: %v\n%.2000s", err, out)
	}
}
