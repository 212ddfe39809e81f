package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/hub"
	"github.com/tracebridge/tracebridge/hub/hubtest"
	"github.com/tracebridge/tracebridge/internal/golden"
)

// An audit export writes one line per audit envelope, in seq order, each
// covered by the checkpoint it carries, with an envelope over the attribute
// limit read back whole from the payload store; --since leaves out older
// envelopes.
func TestAuditLinesAreCoveredAndWhole(t *testing.T) {
	ctx := context.Background()
	node := hubtest.Open(t, hub.Options{Dir: hub.DataDir(filepath.Join(t.TempDir(), "data")), Role: hub.Elect, Name: "export-test"})
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	clock := t0
	em := events.NewEmitter(node, events.EmitterOptions{Payloads: node, Now: func() time.Time { return clock }})
	long := `{"tool":"t","result":"` + strings.Repeat("x", 3*events.MaxAttrLen) + `"}`
	audit := func(tool, envelope string) {
		req := events.NewID()
		em.Emit(events.Event{Kind: events.KindMCPRequestReceived, RequestID: req, Outcome: events.OK})
		em.Emit(events.Event{Kind: events.KindExecutorAudit, RequestID: req, Outcome: events.OK,
			Attrs: events.A(events.AttrTool, tool, "envelope", envelope)})
		clock = clock.Add(time.Hour)
	}
	audit("old", `{"tool":"old"}`)
	audit("long", long)
	audit("cut", `{"tool":"cut", "result":"…`)
	if err := em.FlushAll(ctx); err != nil {
		t.Fatal(err)
	}

	lines := func(since time.Time) []AuditLine {
		t.Helper()
		var buf bytes.Buffer
		if err := NewAudit(node, &buf, since, JSONL).UpToHead(ctx, 1); err != nil {
			t.Fatal(err)
		}
		var got []AuditLine
		for _, l := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
			var a AuditLine
			if err := json.Unmarshal([]byte(l), &a); err != nil {
				t.Fatalf("not an audit line: %v\n%s", err, l)
			}
			got = append(got, a)
		}
		return got
	}
	var whole bytes.Buffer
	if err := NewAudit(node, &whole, time.Time{}, JSONL).UpToHead(ctx, 1); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, "audit-lines.jsonl", masked(whole.String()))
	all := lines(time.Time{})
	if len(all) != 3 || all[0].Tool != "old" || all[1].Tool != "long" || all[2].Tool != "cut" {
		t.Fatalf("lines: %+v", all)
	}
	for _, l := range all {
		if l.Checkpoint == nil || l.Seq > l.Checkpoint.Seq || l.Hash == "" {
			t.Fatalf("seq %d is not covered by its checkpoint %+v", l.Seq, l.Checkpoint)
		}
	}
	if string(all[1].Envelope) != long {
		t.Fatalf("the long envelope came back %d bytes, want %d whole", len(all[1].Envelope), len(long))
	}
	if all[2].Envelope != nil || all[2].EnvelopeCut != `{"tool":"cut", "result":"…` {
		t.Fatalf("a cut envelope: %+v", all[2])
	}
	if since := lines(t0.Add(30 * time.Minute)); len(since) != 2 || since[0].Tool != "long" {
		t.Fatalf("since: %+v", since)
	}
}

var (
	ulidRE = regexp.MustCompile(`\b[0-9A-HJKMNP-TV-Z]{26}\b`)
	hashRE = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	longRE = regexp.MustCompile(`x{100,}`)
	// the checkpoint's signing key, its signature and its wall-clock time
	signedRE = regexp.MustCompile(`"(publicKey|signature)":"[^"]*"|("hash":"<sha256>","time":)"[^"]*"`)
)

// masked is audit lines with what differs from run to run (ids, the hash
// chain's values, the checkpoint's key, signature and time) and the long envelope's filler replaced: the format a
// SIEM reads stays in the golden file.
func masked(s string) string {
	s = ulidRE.ReplaceAllString(s, "<ulid>")
	s = hashRE.ReplaceAllString(s, "<sha256>")
	s = signedRE.ReplaceAllStringFunc(s, func(m string) string {
		k, _, _ := strings.Cut(m, ":")
		if strings.HasPrefix(m, `"hash"`) {
			return `"hash":"<sha256>","time":"<checkpoint time>"`
		}
		return k + `:"<` + strings.Trim(k, `"`) + `>"`
	})
	return longRE.ReplaceAllStringFunc(s, func(m string) string { return fmt.Sprintf("<%d×x>", len(m)) })
}
