package sessions

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
)

// sessionOf is the id of the one MCP session in node's log.
func sessionOf(t *testing.T, node *hub.Node) events.ID {
	t.Helper()
	evs, _, err := node.Range(context.Background(), 1, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range evs {
		if e.Kind == events.KindMCPSessionStarted {
			return e.SessionID
		}
	}
	t.Fatal("no session started in the log")
	return events.ID{}
}

// stepShape is what a step is, without the ids a new recording gives it.
func stepShape(st Step) Step {
	st.RequestID = events.ID{}
	return Step{Step: st.Step, Method: st.Method, Command: st.Command, Server: st.Server, Expect: st.Expect}
}

// Export is the inverse of a re-drive: every committed session, re-driven
// into a log, gathers and exports back to a session with the same steps,
// each with the same crossings, and that export re-drives with no drift.
func TestRedrivenSessionsExportBackWhole(t *testing.T) {
	if testing.Short() {
		t.Skip("re-drives every committed session twice (make test runs it)")
	}
	files, _ := filepath.Glob(filepath.Join("..", "artifacts", "sessions", "*.jsonl"))
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			orig, err := DecodeSession(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			_, node := redriveInto(t, orig)
			in, err := Gather(context.Background(), node, sessionOf(t, node))
			if err != nil {
				t.Fatal(err)
			}
			in.Name, in.Version = orig.Header.Name, "test"
			exported, err := Export(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(exported.Steps) != len(orig.Steps) {
				t.Fatalf("%d steps exported from the re-drive of %d", len(exported.Steps), len(orig.Steps))
			}
			for i := range orig.Steps {
				if want, got := stepShape(orig.Steps[i]), stepShape(exported.Steps[i]); !sameStep(want, got) {
					t.Errorf("step %d (line %d):\n  recorded %+v\n  exported %+v", i, i+2, want, got)
				}
			}
			if exported.Header.Config != orig.Header.Config {
				t.Errorf("the exported config differs:\n%s\n---\n%s", exported.Header.Config, orig.Header.Config)
			}
			var enc bytes.Buffer
			if err := exported.Encode(&enc); err != nil {
				t.Fatal(err)
			}
			again, err := DecodeSession(&enc)
			if err != nil {
				t.Fatalf("the export does not decode: %v", err)
			}
			res, _ := redriveInto(t, again)
			for _, d := range res.Drift {
				t.Errorf("the export drifts: %s", d)
			}
		})
	}
}

func sameStep(a, b Step) bool {
	return a.Step == b.Step && a.Method == b.Method && a.Command == b.Command && a.Server == b.Server && slices.Equal(sorted(a.Expect), sorted(b.Expect))
}

// sorted is a step's crossings in a fixed order: the host's events and the
// bridge's are two logs' worth, interleaved as they reached the hub.
func sorted(cs []Crossing) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprint(c)
	}
	slices.Sort(out)
	return out
}

// F-U2: a session whose recorded configuration holds a redacted value (a
// credential in a server's argv) is exported as recorded, the marker in
// place and the header saying so; one cut in the log still refuses, naming
// --config. The twin: a clean configuration is exported unmarked.
func TestRecordedConfigWithARedactedValue(t *testing.T) {
	started := func(cfg string) ExportInput {
		return ExportInput{Session: events.NewID(), Notifications: []events.Event{{Kind: events.KindMCPSessionStarted, Attrs: events.A("config", cfg)}}}
	}
	redacted := "[servers.cli]\ncommand = \"python3\"\nargs = [\"up.py\", \"--api-key\", \"[REDACTED:secret:0301fafc]\"]\n"
	if cfg, marked, err := recordedConfig(started(redacted)); err != nil || !marked || cfg != redacted {
		t.Fatalf("a redacted configuration: %q %v %v", cfg, marked, err)
	}
	clean := "[servers.cli]\ncommand = \"python3\"\n"
	if cfg, marked, err := recordedConfig(started(clean)); err != nil || marked || cfg != clean {
		t.Fatalf("a clean configuration: %q %v %v", cfg, marked, err)
	}
	if _, _, err := recordedConfig(started("[servers.cli]\ncommand = \"py…[TRUNCATED:size=9000]")); err == nil || !strings.Contains(err.Error(), "--config") {
		t.Fatalf("a cut configuration: %v", err)
	}
}
