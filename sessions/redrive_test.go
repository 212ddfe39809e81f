package sessions

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/internal/golden"
)

// redriveFile re-drives one committed session file in this package, as
// `tracebridge session replay` does: a fresh log on the session's clock,
// the bridge built by bridge.New from the recording.
func redriveFile(t *testing.T, path string, edit func(string) string) *Redriven {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if edit != nil {
		text = edit(text)
	}
	s, err := DecodeSession(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := redriveInto(t, s)
	return res
}

// redriveInto re-drives s into a fresh log on the session's clock, open
// until the test ends.
func redriveInto(t *testing.T, s *Session) (*Redriven, *hub.Node) {
	t.Helper()
	ctx := context.Background()
	dir := hub.DataDir(filepath.Join(t.TempDir(), "d"))
	if err := dir.Ensure(); err != nil {
		t.Fatal(err)
	}
	node := hubtest.Open(t, hub.Options{Dir: dir, Role: hub.Elect, Now: Clock(s), Name: "session-test"})
	res, err := Redrive(ctx, s, RedriveOptions{Log: node, PipePath: dir.PipePath(), Version: "test", Logger: quietSDK})
	if err != nil {
		t.Fatalf("%s: %v", s.Header.Name, err)
	}
	return res, node
}

// Every committed session re-drives with no drift in this package (no
// binary, no processes: the recording stands in for the host, the
// upstreams, the secrets and the operators), and a session whose recorded
// upstream answer is edited drifts at the client's answer.
func TestCommittedSessionsRedrive(t *testing.T) {
	if testing.Short() {
		t.Skip("re-drives every committed session (make test runs it)")
	}
	files, _ := filepath.Glob(filepath.Join("..", "artifacts", "sessions", "*.jsonl"))
	if len(files) < 10 {
		t.Fatalf("found %d committed sessions", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			res := redriveFile(t, f, nil)
			if len(res.Runs) == 0 {
				t.Fatal("nothing was re-driven")
			}
			for _, d := range res.Drift {
				t.Errorf("drift: %s", d)
			}
		})
	}
	res := redriveFile(t, filepath.Join("..", "artifacts", "sessions", "upstream-stock.jsonl"), func(s string) string {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if strings.Contains(l, `"step":"upstream"`) {
				lines[i] = strings.Replace(l, "This is a simple prompt without arguments.", "This prompt was changed.", 1)
			}
		}
		return strings.Join(lines, "\n")
	})
	found := false
	for _, d := range res.Drift {
		found = found || strings.Contains(d.At, "messages[0].content.text") && strings.Contains(d.Got, "This prompt was changed.")
	}
	if !found {
		t.Fatalf("an edited upstream answer did not drift at the client's answer: %#v", res.Drift)
	}
	var text strings.Builder
	for _, d := range res.Drift {
		text.WriteString(d.String() + "\n")
	}
	golden.Check(t, "drift-edited-prompt.txt", text.String())
}

// Accepting a drift (session replay --update) writes the answer as the
// recording saw it: the re-drive's own pipe path, which every re-drive
// differs in, goes back to the recorded one, so the accepted file
// re-drives with no drift.
func TestAcceptKeepsTheRecordedPipePath(t *testing.T) {
	if testing.Short() {
		t.Skip("re-drives a committed session (make test runs it)")
	}
	b, err := os.ReadFile(filepath.Join("..", "artifacts", "sessions", "host-missing.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeSession(strings.NewReader(strings.Replace(string(b), "no workspace host listens", "no host listens", 1)))
	if err != nil {
		t.Fatal(err)
	}
	res, node := redriveInto(t, s)
	if len(res.Drift) == 0 {
		t.Fatal("an edited answer did not drift")
	}
	if err := res.Accept(context.Background(), node, s); err != nil {
		t.Fatal(err)
	}
	var buf strings.Builder
	s.Encode(&buf)
	if !strings.Contains(buf.String(), s.Header.Pipe) {
		t.Fatalf("the accepted answer does not name the recorded pipe %s", s.Header.Pipe)
	}
	again, err := DecodeSession(strings.NewReader(buf.String()))
	if err != nil {
		t.Fatal(err)
	}
	if res, _ := redriveInto(t, again); len(res.Drift) != 0 {
		t.Fatalf("the accepted session drifts: %v", res.Drift)
	}
}
