package tools

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/bridge/executor"
	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
)

func writeFile(t *testing.T, path, body string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), mode); err != nil {
		t.Fatal(err)
	}
}

func TestDiscoverLoadsGoodManifestsAndReportsTheRest(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "upper.sh"), "#!/bin/sh\ntr a-z A-Z\n", 0o755)
	writeFile(t, filepath.Join(dir, "upper.tool.json"), `{"id":"upper","description":"uppercases","command":["./upper.sh"],
		"inputSchema":{"type":"object","properties":{"text":{"type":"string"}}},"sideEffects":false,"approval":"never"}`, 0o644)
	writeFile(t, filepath.Join(dir, "broken.tool.json"), `{"id":"broken"`, 0o644)
	writeFile(t, filepath.Join(dir, "noschema.tool.json"), `{"id":"x","command":["true"]}`, 0o644)
	tools, findings := Discover([]string{dir, filepath.Join(dir, "missing")})
	if len(tools) != 1 || tools[0].ID != "upper" || tools[0].SideEffects || !strings.Contains(strings.Join(tools[0].Capabilities, ","), config.CapProcessRun) {
		t.Fatalf("tools %+v", tools)
	}
	codes := map[events.Code]int{}
	for _, f := range findings {
		codes[f.Code]++
		if _, ok := events.Lookup(f.Event().Kind); !ok || (f.Code != "") != (f.Event().Code != "") {
			t.Fatalf("finding %+v makes event %+v", f, f.Event())
		}
	}
	if codes[events.CodeInvalidManifest] != 2 || codes[events.CodeDirMissing] != 1 || codes[""] != 1 {
		t.Fatalf("findings %+v", findings)
	}
	out, err := tools[0].Run(context.Background(), executor.Call{Args: json.RawMessage(`{"text":"hi"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if out.(map[string]any)["TEXT"] != "HI" {
		t.Fatalf("tool output %v", out)
	}
}

func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{"id":"upper","command":["./upper.sh"],"inputSchema":{"type":"object"}}`))
	f.Add([]byte(`{"id":"x","command":[],"inputSchema":{"type":"string"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		tool, err := parseManifest("/tools/f.tool.json", b)
		if err != nil {
			return
		}
		if tool.ID == "" || tool.InputSchema == nil || tool.Run == nil || !strings.Contains(strings.Join(tool.Capabilities, ","), config.CapProcessRun) {
			t.Fatalf("accepted an unusable manifest: %+v", tool)
		}
	})
}
