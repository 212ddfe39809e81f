package export

import (
	"os"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/golden"
	"github.com/tracebridge/tracebridge/replay"
)

// failedRun is a fixed tools/call that failed at the pipe: a message with
// a pipe and a backtick in it, so escaping is part of the golden file.
func failedRun(t *testing.T) replay.Run {
	id := func(s string) events.ID {
		v, err := events.ParseID(s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	req, op, sess := id("01KB0000000000000000000001"), id("01KB0000000000000000000002"), id("01KB0000000000000000000003")
	t0 := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	var evs []events.Event
	add := func(ms int, kind string, code events.Code, attrs map[string]string) {
		info, _ := events.Lookup(kind)
		evs = append(evs, events.Event{Seq: uint64(len(evs) + 1), ID: id("01KB00000000000000000001" + string(rune('A'+len(evs))) + "0"), Time: t0.Add(time.Duration(ms) * time.Millisecond),
			Kind: kind, Boundary: info.Boundary, From: info.From, To: info.To, RequestID: req, SessionID: sess, OperationID: op,
			Outcome: events.OutcomeOf(code), Code: code, DurationMs: float64(ms), Attrs: events.AttrsOf(attrs)})
	}
	tool := map[string]string{events.AttrMethod: "tools/call", events.AttrTool: "get_selection"}
	add(0, events.KindMCPRequestReceived, "", tool)
	add(1, events.KindExecutorStarted, "", tool)
	add(2, events.KindToolStarted, "", tool)
	add(3, events.KindPipeUnavailable, events.CodePipeUnavailable, map[string]string{events.AttrError: "no host | at `run/host.sock`"})
	add(4, events.KindToolCompleted, events.CodePipeUnavailable, tool)
	add(5, events.KindMCPResponseSent, events.CodePipeUnavailable, tool)
	return replay.Judge(req, evs)
}

// The review markdown of a failed run: verdict, timeline table and
// diagram, with table cells escaped.
func TestMarkdownGolden(t *testing.T) {
	golden.Check(t, "failed-run.md", Markdown(failedRun(t), true))
}

// A deterministic triad of the failed run: its log and its metadata.json
// (the verdict, the boundaries' time, the scope) as CI compares them.
func TestTriadGolden(t *testing.T) {
	tr, err := WriteTriad(t.TempDir(), failedRun(t), TriadOptions{Slug: "failed-run", Version: "test", Deterministic: true, Source: "golden"})
	if err != nil {
		t.Fatal(err)
	}
	for file, name := range map[string]string{tr.Log: "failed-run.log", tr.Metadata: "failed-run.metadata.json", tr.Diagram: "failed-run.mmd"} {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, name, string(b))
	}
}
