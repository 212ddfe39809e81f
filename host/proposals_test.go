package host

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tracebridge/tracebridge/store/storetest"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type propRig struct {
	tr    *tree
	st    *store.Store
	em    *events.Emitter
	props *Proposals
	state string
}

func newPropRig(t *testing.T) *propRig {
	t.Helper()
	r := &propRig{tr: newTree(t), state: filepath.Join(t.TempDir(), "state")}
	os.WriteFile(filepath.Join(r.tr.root, "a.go"), []byte("package a\n\nfunc A() int { return 1 }\n"), 0o644)
	os.WriteFile(filepath.Join(r.tr.root, "b.go"), []byte("package b\n\nvar X = \"x\"\nvar Y = \"x\"\n"), 0o644)
	log := storetest.Open(t)
	r.st, r.em = log.Store, log.Emitter
	r.reopen(t)
	return r
}

func (r *propRig) reopen(t *testing.T) {
	t.Helper()
	var err error
	if r.props, err = OpenProposals(r.tr.ws, r.em, r.state, nil); err != nil {
		t.Fatal(err)
	}
}

func (r *propRig) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(r.tr.root, name))
	return string(b)
}

func codeOf(err error) events.Code {
	var pe *events.Err
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

var twoFiles = func() []FileChange {
	return []FileChange{
		{Path: "a.go", Edits: []Edit{{Original: "return 1", Replacement: "return 2"}}},
		{Path: "./b.go", Edits: []Edit{{Original: "var X = \"x\"", Replacement: "var X = \"z\""}}},
	}
}

func TestProposalLifecycle(t *testing.T) {
	r := newPropRig(t)
	req := events.NewID()
	pr, err := r.props.Create(req.String(), "", twoFiles())
	if err != nil {
		t.Fatal(err)
	}
	if pr.State != Pending || r.read("a.go") != "package a\n\nfunc A() int { return 1 }\n" {
		t.Fatal("creating a proposal wrote something")
	}
	if _, err := r.props.Apply(context.Background(), pr.ID); codeOf(err) != events.CodeNotApproved {
		t.Fatalf("apply before approval: %v", err)
	}
	if _, err := r.props.Decide(pr.ID, true, "not-the-hash", "op"); codeOf(err) != events.CodeHashChanged {
		t.Fatalf("approval of other content: %v", err)
	}
	if _, err := r.props.Decide(pr.ID, true, pr.ContentHash, "op"); err != nil {
		t.Fatal(err)
	}
	done, err := r.props.Apply(context.Background(), pr.ID)
	if err != nil || done.State != Applied {
		t.Fatalf("apply: %+v %v", done, err)
	}
	if !strings.Contains(r.read("a.go"), "return 2") || !strings.Contains(r.read("b.go"), `var X = "z"`) {
		t.Fatal("files not changed")
	}
	if !strings.Contains(done.Preview, "-func A() int { return 1 }") || !strings.Contains(done.Preview, "+var X = \"z\"") {
		t.Fatalf("preview:\n%s", done.Preview)
	}
	// The terminal state and its preview survive a restart.
	r.reopen(t)
	if got, _ := r.props.Get(pr.ID); got.State != Applied || got.Preview == "" {
		t.Fatalf("after reopen: %+v", got)
	}
	r.em.Flush(context.Background(), req)
	evs, _ := r.st.ByRequest(req)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	if strings.Join(kinds, " ") != "proposal.created proposal.approved proposal.applying proposal.applied" {
		t.Fatalf("events %v", kinds)
	}
}

func TestDriftAmbiguityAndAllOrNothing(t *testing.T) {
	r := newPropRig(t)
	if _, err := r.props.Create("", "", []FileChange{{Path: "b.go", Edits: []Edit{{Original: `"x"`, Replacement: `"y"`}}}}); codeOf(err) != events.CodeAmbiguous {
		t.Fatalf("ambiguous edit: %v", err)
	}
	if _, err := r.props.Create("", "", []FileChange{{Path: "../outside/sentinel.txt", Edits: []Edit{{Original: "u", Replacement: "p"}}}}); err == nil {
		t.Fatal("a proposal outside the root was accepted")
	}
	pr, _ := r.props.Create("", "", twoFiles())
	r.props.Decide(pr.ID, true, pr.ContentHash, "op")
	// b.go changes after approval: neither file may be written.
	os.WriteFile(filepath.Join(r.tr.root, "b.go"), []byte("package b\n\nvar X = \"x\"\n// edited\n"), 0o644)
	got, err := r.props.Apply(context.Background(), pr.ID)
	if codeOf(err) != events.CodeDrift || got.State != Failed {
		t.Fatalf("apply after drift: %+v %v", got, err)
	}
	if strings.Contains(r.read("a.go"), "return 2") {
		t.Fatal("a.go was written although b.go drifted: not all-or-nothing")
	}
}

func TestExactlyOneDecisionWins(t *testing.T) {
	r := newPropRig(t)
	pr, _ := r.props.Create("", "", twoFiles())
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Go(func() {
			if _, err := r.props.Decide(pr.ID, i%2 == 0, pr.ContentHash, "op"); err == nil {
				wins.Add(1)
			} else if codeOf(err) != events.CodeNotPending {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d decisions won", wins.Load())
	}
}

// A host killed after writing a.go but before b.go: the journal makes the
// next start finish the set (both files still at base or new), or fail it
// honestly when someone changed a file in between.
func TestInterruptedApplyIsReconciled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		meddle  bool
		state   string
		bResult string
	}{
		{"rolled forward", false, Applied, `var X = "z"`},
		{"someone changed b.go", true, Failed, "// someone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newPropRig(t)
			pr, _ := r.props.Create("", "", twoFiles())
			r.props.Decide(pr.ID, true, pr.ContentHash, "op")
			// What Apply does up to the crash: journal, then the first file.
			var j journal
			j.ID = pr.ID
			for _, f := range pr.Files {
				cur, _ := r.tr.ws.ReadFile(f.Path)
				next, _ := applyEdits(f.Path, cur, f.Edits)
				j.Files = append(j.Files, journalEntry{Path: f.Path, BaseHash: f.BaseHash, NewHash: hashBytes(next), New: next})
			}
			b, _ := json.Marshal(j)
			os.WriteFile(filepath.Join(r.state, "apply.journal"), b, 0o600)
			r.tr.ws.WriteFile("a.go", j.Files[0].New)
			if tc.meddle {
				os.WriteFile(filepath.Join(r.tr.root, "b.go"), []byte("// someone\n"), 0o644)
			}
			r.reopen(t) // restart
			got, _ := r.props.Get(pr.ID)
			if got.State != tc.state || !strings.Contains(r.read("b.go"), tc.bResult) {
				t.Fatalf("after restart: state %s (%s), b.go %q", got.State, got.Message, r.read("b.go"))
			}
			if tc.meddle && !strings.Contains(got.Message, "b.go") {
				t.Fatalf("the failure does not name the file: %q", got.Message)
			}
			if _, err := os.Stat(filepath.Join(r.state, "apply.journal")); !os.IsNotExist(err) {
				t.Fatal("journal left behind")
			}
		})
	}
}

func TestNothingIsWrittenWithoutDurableIntent(t *testing.T) {
	r := newPropRig(t)
	pr, _ := r.props.Create(events.NewID().String(), "", twoFiles())
	r.props.Decide(pr.ID, true, pr.ContentHash, "op")
	r.st.Refuse(&events.Err{Code: events.CodeLogUnavailable, Msg: "disk full"})
	if _, err := r.props.Apply(context.Background(), pr.ID); codeOf(err) != events.CodeLogUnavailable {
		t.Fatalf("apply with no log: %v", err)
	}
	if strings.Contains(r.read("a.go"), "return 2") {
		t.Fatal("a file was written without durable intent")
	}
}

func TestResetClearsPendingKeepsPreviews(t *testing.T) {
	r := newPropRig(t)
	done, _ := r.props.Create("", "", []FileChange{{Path: "a.go", Edits: []Edit{{Original: "return 1", Replacement: "return 3"}}}})
	r.props.Decide(done.ID, true, done.ContentHash, "op")
	r.props.Apply(context.Background(), done.ID)
	pend, _ := r.props.Create("", "", []FileChange{{Path: "b.go", Edits: []Edit{{Original: "var Y", Replacement: "var W"}}}})
	if n, err := r.props.Reset("op"); err != nil || n != 1 {
		t.Fatalf("reset: %d %v", n, err)
	}
	if p, _ := r.props.Get(pend.ID); p.State != Rejected {
		t.Fatalf("pending after reset: %s", p.State)
	}
	if p, _ := r.props.Get(done.ID); p.State != Applied || p.Preview == "" {
		t.Fatal("reset touched a completed proposal")
	}
}

// A proposal can create a file that does not exist (one edit, no original);
// if something appears at that path before it is approved, it fails with
// Drift and nothing is overwritten.
func TestAProposalCreatesANewFile(t *testing.T) {
	r := newPropRig(t)
	pr, err := r.props.Create(events.NewID().String(), "a new helper", []FileChange{{Path: "c.go", Edits: []Edit{{Replacement: "package c\n"}}}})
	if err != nil || !pr.Files[0].Create || pr.Files[0].BaseHash != "" || pr.Description != "a new helper" {
		t.Fatalf("create: %+v %v", pr, err)
	}
	if shown := r.props.WithPreviews([]*Proposal{pr})[0]; !strings.Contains(shown.Preview, "+package c") {
		t.Fatalf("preview: %q", shown.Preview)
	}
	r.props.Decide(pr.ID, true, pr.ContentHash, "op")
	if got, err := r.props.Apply(context.Background(), pr.ID); err != nil || got.State != Applied || r.read("c.go") != "package c\n" {
		t.Fatalf("apply: %+v %v", got, err)
	}

	// Something appeared there meanwhile: Drift, and it is kept.
	pr, _ = r.props.Create("", "", []FileChange{{Path: "d.go", Edits: []Edit{{Replacement: "package d\n"}}}})
	os.WriteFile(filepath.Join(r.tr.root, "d.go"), []byte("mine\n"), 0o644)
	r.props.Decide(pr.ID, true, pr.ContentHash, "op")
	if got, err := r.props.Apply(context.Background(), pr.ID); codeOf(err) != events.CodeDrift || got.State != Failed || r.read("d.go") != "mine\n" {
		t.Fatalf("create over a new file: %+v %v %q", got, err, r.read("d.go"))
	}
	// An empty original in a file that exists, or beside other edits, is refused.
	if _, err := r.props.Create("", "", []FileChange{{Path: "a.go", Edits: []Edit{{Replacement: "x"}}}}); codeOf(err) != events.CodeInvalidArguments {
		t.Fatalf("empty original in an existing file: %v", err)
	}
	if _, err := r.props.Create("", strings.Repeat("x", MaxDescriptionBytes+1), twoFiles()); codeOf(err) != events.CodeInvalidArguments {
		t.Fatalf("a long description: %v", err)
	}
}

// Skip defers a decision: the proposal stays pending, the deferral is
// recorded, and it can still be approved.
func TestSkipDefersADecision(t *testing.T) {
	r := newPropRig(t)
	req := events.NewID()
	pr, _ := r.props.Create(req.String(), "", twoFiles())
	skipped, err := r.props.Skip(pr.ID, "op")
	if err != nil || skipped.State != Pending || skipped.Deferred.IsZero() {
		t.Fatalf("skip: %+v %v", skipped, err)
	}
	r.props.Decide(pr.ID, true, pr.ContentHash, "op")
	if got, err := r.props.Apply(context.Background(), pr.ID); err != nil || got.State != Applied {
		t.Fatalf("approve after skip: %+v %v", got, err)
	}
	if _, err := r.props.Skip(pr.ID, "op"); codeOf(err) != events.CodeNotPending {
		t.Fatalf("skip an applied proposal: %v", err)
	}
	r.em.Flush(context.Background(), req)
	evs, _ := r.st.ByRequest(req)
	if ks := strings.Join(storetest.Kinds(evs), " "); !strings.Contains(ks, "proposal.deferred proposal.approved") {
		t.Fatalf("events: %s", ks)
	}
}
