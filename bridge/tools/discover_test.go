package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

// A discovered tool is a process the bridge runs with the call's arguments
// on stdin: it sees its secrets as TB_SECRET_<NAME> and the request's ids,
// and nothing else of the bridge's environment but PATH and HOME; what it
// does wrong (floods stdout, exits non-zero, prints what is not JSON, runs
// past the call's end) comes back as an error that says which.
func TestADiscoveredToolGetsOnlyItsOwnEnvironmentAndFailsClearly(t *testing.T) {
	t.Setenv("TB_TEST_BRIDGE_ONLY", "the bridge's own")
	dir := t.TempDir()
	scripts := map[string]string{
		"env":   "#!/bin/sh\ncat >/dev/null\nprintf '{\"key\":\"%s\",\"req\":\"%s\",\"leak\":\"%s\"}' \"$TB_SECRET_KEY\" \"$TB_REQUEST_ID\" \"$TB_TEST_BRIDGE_ONLY\"\n",
		"flood": "#!/bin/sh\nhead -c " + fmt.Sprint(MaxToolOutput+1) + " /dev/zero | tr '\\0' x\n",
		"fail":  "#!/bin/sh\necho 'no such entry' >&2\nexit 3\n",
		"prose": "#!/bin/sh\necho 'hello, not JSON'\n",
		"slow":  "#!/bin/sh\nsleep 30\n",
	}
	for name, body := range scripts {
		writeFile(t, filepath.Join(dir, name+".sh"), body, 0o755)
		writeFile(t, filepath.Join(dir, name+".tool.json"), `{"id":"`+name+`","command":["./`+name+`.sh"],"inputSchema":{"type":"object"}}`, 0o644)
	}
	tools, findings := Discover([]string{dir})
	if len(tools) != len(scripts) {
		t.Fatalf("%d tools, findings %+v", len(tools), findings)
	}
	byID := map[string]*executor.Tool{}
	for _, tl := range tools {
		byID[tl.ID] = tl
	}
	ctx := context.Background()
	req := events.NewID()
	out, err := byID["env"].Run(ctx, executor.Call{RequestID: req, Secrets: map[string]string{"KEY": "k-123"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(map[string]any); got["key"] != "k-123" || got["req"] != req.String() || got["leak"] != "" {
		t.Fatalf("the tool saw %v", got)
	}
	for id, want := range map[string]string{
		"flood": fmt.Sprintf("more than %d bytes", MaxToolOutput),
		"fail":  "exited with 3: no such entry",
		"prose": "not JSON",
	} {
		if _, err := byID[id].Run(ctx, executor.Call{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want it to say %q", id, err, want)
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := byID["slow"].Run(cctx, executor.Call{}); done <- err }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a call whose context ended succeeded")
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the tool's process outlived its call")
	}
}
