package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/store/storetest"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

type echoArgs struct {
	Text string `json:"text"`
}

// harness is an executor over a real store, with a tool that counts its runs.
type harness struct {
	st   *store.Store
	em   *events.Emitter
	x    *Executor
	runs atomic.Int32
}

func newHarness(t *testing.T, cfg string, run RunFunc, mod func(*Descriptor)) *harness {
	t.Helper()
	h := &harness{}
	log := storetest.Open(t)
	// Long values kept whole in the payload store, as in the bridge.
	h.st, h.em = log.Store, events.NewEmitter(log.Store, events.EmitterOptions{Logger: quiet, Payloads: log.Store})
	t.Cleanup(func() { h.em.Close(context.Background()) })
	d := Descriptor{ID: "echo", Category: "test", Source: "builtin", Capabilities: []string{config.CapTextSearch}}
	if mod != nil {
		mod(&d)
	}
	if run == nil {
		run = func(_ context.Context, c Call) (any, error) {
			var a echoArgs
			json.Unmarshal(c.Args, &a)
			return map[string]string{"text": a.Text}, nil
		}
	}
	counted := func(ctx context.Context, c Call) (any, error) { h.runs.Add(1); return run(ctx, c) }
	cat, err := NewCatalog(&Tool{Descriptor: d, InputSchema: SchemaFor[echoArgs](), Run: counted})
	if err != nil {
		t.Fatal(err)
	}
	var c *config.Config
	var cerr error
	if cfg != "" {
		c, cerr = config.Parse("tracebridge.toml", []byte(cfg))
	}
	h.x = New(Options{Catalog: cat, Emitter: h.em, Log: logReader{h.st}, Config: c, ConfigErr: cerr, Logger: quiet,
		PollEvery: 10 * time.Millisecond, Getenv: func(k string) string { return map[string]string{"CANARY": canary}[k] }})
	return h
}

type logReader struct{ st *store.Store }

func (l logReader) ByRequest(_ context.Context, id events.ID) ([]events.Event, error) {
	return l.st.ByRequest(id)
}

const canary = "canary-5d1e9f7a3c"

func (h *harness) call(t *testing.T, tool, args string) (Result, []events.Event) {
	t.Helper()
	req := h.em.NewID()
	res := h.x.Execute(context.Background(), Invocation{Tool: tool, Args: json.RawMessage(args), RequestID: req, Client: "test/1"})
	if err := h.em.Flush(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	evs, err := h.st.ByRequest(req)
	if err != nil {
		t.Fatal(err)
	}
	return res, evs
}

func kinds(evs []events.Event) string { return strings.Join(storetest.Kinds(evs), " ") }

func envelopeOf(t *testing.T, evs []events.Event) map[string]any {
	t.Helper()
	last := evs[len(evs)-1]
	if last.Kind != events.KindExecutorAudit {
		t.Fatalf("last event is %s, want the audit envelope", last.Kind)
	}
	var env map[string]any
	if err := json.Unmarshal([]byte(last.Attrs.Get("envelope")), &env); err != nil {
		t.Fatal(err)
	}
	return env
}

func TestSuccessfulCallRecordsEveryStep(t *testing.T) {
	h := newHarness(t, "", nil, nil)
	res, evs := h.call(t, "echo", `{"text":"hi"}`)
	if !res.OK() || res.Value.(map[string]string)["text"] != "hi" {
		t.Fatalf("result %+v", res)
	}
	want := "executor.started executor.catalog.resolved policy.decided tool.started tool.completed executor.audit"
	if got := kinds(evs); got != want {
		t.Fatalf("steps:\n got %s\nwant %s", got, want)
	}
	for _, e := range evs {
		if e.OperationID != res.OperationID {
			t.Fatalf("%s has operation %s, want %s", e.Kind, e.OperationID, res.OperationID)
		}
	}
	env := envelopeOf(t, evs)
	if env["outcome"] != "ok" || env["classification"].(map[string]any)["risk"] != "low" || env["descriptor"].(map[string]any)["id"] != "echo" {
		t.Fatalf("envelope %v", env)
	}
}

func TestFailuresStopBeforeTheToolRuns(t *testing.T) {
	tests := []struct {
		name, cfg, tool, args string
		mod                   func(*Descriptor)
		code                  events.Code
		lastStep              string
	}{
		{"unknown tool", "", "nope", `{}`, nil, events.CodeUnknownTool, "executor.catalog.resolved"},
		{"bad arguments", "", "echo", `{"text":5}`, nil, events.CodeInvalidArguments, "executor.catalog.resolved"},
		{"extra argument", "", "echo", `{"text":"a","rm":"-rf"}`, nil, events.CodeInvalidArguments, "executor.catalog.resolved"},
		{"capability not granted", "", "echo", `{"text":"a"}`, func(d *Descriptor) { d.Capabilities = []string{config.CapProcessRun} }, events.CodePolicyDenied, "policy.decided"},
		{"tool denied", "[policy]\ndeny = [\"echo\"]\n", "echo", `{"text":"a"}`, nil, events.CodePolicyDenied, "policy.decided"},
		{"broken config", "[approval]\nmode = \"maybe\"\n", "echo", `{"text":"a"}`, nil, events.CodeConfigInvalid, "policy.decided"},
		{"unresolved secret", "[secrets.GONE]\nenv = \"NOT_SET\"\n", "echo", `{"text":"a"}`, func(d *Descriptor) { d.Secrets = []string{"GONE"} }, events.CodeSecretUnresolved, "secrets.resolved"},
		{"undefined secret", "", "echo", `{"text":"a"}`, func(d *Descriptor) { d.Secrets = []string{"UNDEFINED"} }, events.CodeSecretUnresolved, "secrets.resolved"},
		{"approval mode deny", "[approval]\nmode = \"deny\"\n", "echo", `{"text":"a"}`, func(d *Descriptor) { d.Approval = "always" }, events.CodeApprovalDenied, "approval.decided"},
		{"approval timeout", "[approval]\nmode = \"prompt\"\ntimeout = \"150ms\"\n", "echo", `{"text":"a"}`, func(d *Descriptor) { d.Approval = "always" }, events.CodeApprovalTimeout, "approval.decided"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, nil, tc.mod)
			res, evs := h.call(t, tc.tool, tc.args)
			if res.Code != tc.code || res.Message == "" {
				t.Fatalf("result %+v, want code %s", res, tc.code)
			}
			if h.runs.Load() != 0 {
				t.Fatal("the tool ran")
			}
			for _, e := range evs {
				if e.Kind == events.KindToolStarted {
					t.Fatalf("tool.started recorded: %s", kinds(evs))
				}
			}
			if step := evs[len(evs)-2]; step.Kind != tc.lastStep || step.Code != tc.code {
				t.Fatalf("steps %s: want the last step %s(%s)", kinds(evs), tc.lastStep, tc.code)
			}
			env := envelopeOf(t, evs)
			if env["code"] != string(tc.code) {
				t.Fatalf("envelope code %v, want %s", env["code"], tc.code)
			}
		})
	}
}

func TestPromptApprovalIsBoundToTheArguments(t *testing.T) {
	for _, tc := range []struct {
		name, decision string
		sameArgs       bool
		code           events.Code
	}{
		{"approved", events.Approve, true, ""},
		{"denied", events.Deny, true, events.CodeApprovalDenied},
		{"approved for other arguments", events.Approve, false, events.CodeApprovalDenied},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, "[approval]\nmode = \"prompt\"\ntimeout = \"10s\"\n", nil, func(d *Descriptor) { d.Approval = "always" })
			args := `{"text":"ship it"}`
			req := h.em.NewID()
			go func() { // the operator, in another process in real life
				for {
					evs, _ := h.st.ByRequest(req)
					for _, e := range evs {
						if e.Kind == events.KindApprovalRequested {
							hash := e.Attrs.Get(events.AttrArgsHash)
							if !tc.sameArgs {
								hash = ArgsHash(json.RawMessage(`{"text":"something else"}`))
							}
							h.st.Append(context.Background(), []events.Event{{ID: events.NewID(), Time: time.Now(), Kind: events.KindApprovalDecided,
								Boundary: events.BoundaryApproval, RequestID: req, Outcome: events.OK,
								Attrs: events.A(events.AttrApprovalID, e.Attrs.Get(events.AttrApprovalID), events.AttrDecision, tc.decision, events.AttrArgsHash, hash, "by", "operator")}})
							return
						}
					}
					time.Sleep(5 * time.Millisecond)
				}
			}()
			res := h.x.Execute(context.Background(), Invocation{Tool: "echo", Args: json.RawMessage(args), RequestID: req})
			if res.Code != tc.code {
				t.Fatalf("result %+v, want code %q", res, tc.code)
			}
			if ran := h.runs.Load() == 1; ran != (tc.code == "") {
				t.Fatalf("tool ran = %v", ran)
			}
		})
	}
}

func TestRunFailuresBecomeCodes(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	tests := []struct {
		name string
		run  RunFunc
		cfg  string
		ctx  func() (context.Context, context.CancelFunc)
		code events.Code
	}{
		{"error", func(context.Context, Call) (any, error) { return nil, errors.New("disk on fire") }, "", nil, events.CodeToolError},
		{"panic", func(context.Context, Call) (any, error) { panic("boom") }, "", nil, events.CodeToolPanic},
		{"timeout, ignoring its context", func(context.Context, Call) (any, error) { <-block; return nil, nil },
			"[tools.echo]\ntimeout = \"100ms\"\n", nil, events.CodeToolTimeout},
		{"cancelled by the client", func(ctx context.Context, _ Call) (any, error) { <-ctx.Done(); return nil, ctx.Err() }, "",
			func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 50*time.Millisecond)
			}, events.CodeCancelled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.run, nil)
			ctx, cancel := context.Background(), func() {}
			if tc.ctx != nil {
				ctx, cancel = tc.ctx()
			}
			defer cancel()
			req := h.em.NewID()
			res := h.x.Execute(ctx, Invocation{Tool: "echo", Args: json.RawMessage(`{"text":"x"}`), RequestID: req})
			if res.Code != tc.code {
				t.Fatalf("result %+v, want %s", res, tc.code)
			}
			h.em.Flush(context.Background(), req)
			evs, _ := h.st.ByRequest(req)
			if k := evs[len(evs)-2]; k.Kind != events.KindToolCompleted || k.Code != tc.code {
				t.Fatalf("steps %s", kinds(evs))
			}
		})
	}
}

func TestSecretsReachTheToolButNotTheLog(t *testing.T) {
	cfg := "[secrets.API]\nenv = \"CANARY\"\n"
	var got string
	h := newHarness(t, cfg, func(_ context.Context, c Call) (any, error) {
		got = c.Secrets["API"]
		return nil, fmt.Errorf("upstream rejected token %s", c.Secrets["API"])
	}, func(d *Descriptor) { d.Secrets = []string{"API"} })
	res, evs := h.call(t, "echo", `{"text":"`+canary+`"}`)
	if got != canary {
		t.Fatalf("tool got secret %q", got)
	}
	if res.Code != events.CodeToolError || strings.Contains(res.Message, canary) {
		t.Fatalf("result %+v leaks or lacks the error", res)
	}
	h.em.Close(context.Background())
	h.st.Close()
	b, _ := os.ReadFile(h.st.Path())
	if strings.Contains(string(b), canary) || strings.Contains(string(b), "canary-5d1e") {
		t.Fatal("the secret reached the store file")
	}
	if env := envelopeOf(t, evs); !strings.Contains(fmt.Sprint(env["secrets"]), "env:CANARY") {
		t.Fatalf("envelope does not name the secret reference: %v", env["secrets"])
	}
}

func TestSideEffectsNeedAWritableLog(t *testing.T) {
	h := newHarness(t, "", nil, func(d *Descriptor) { d.SideEffects = true })
	h.st.Refuse(&events.Err{Code: events.CodeLogUnavailable, Msg: "disk full"})
	req := h.em.NewID()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	res := h.x.Execute(ctx, Invocation{Tool: "echo", Args: json.RawMessage(`{"text":"x"}`), RequestID: req})
	if res.Code != events.CodeLogUnavailable || h.runs.Load() != 0 {
		t.Fatalf("result %+v, runs %d", res, h.runs.Load())
	}
}

func TestCatalogRejectsDuplicatesAndAcceptsEmpty(t *testing.T) {
	tool := func() *Tool {
		return &Tool{Descriptor: Descriptor{ID: "a"}, InputSchema: SchemaFor[echoArgs](), Run: func(context.Context, Call) (any, error) { return nil, nil }}
	}
	if _, err := NewCatalog(tool(), tool()); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Fatalf("duplicate ids: %v", err)
	}
	c, err := NewCatalog()
	if err != nil || len(c.Tools()) != 0 {
		t.Fatalf("empty catalog: %v", err)
	}
}

// Classification follows the code as the design says: a policy denial is a
// warning of medium risk, an unresolved secret a warning of high risk, a
// crash an error of high risk, a success info of low risk.
func TestClassificationFollowsTheCode(t *testing.T) {
	for _, tc := range []struct {
		name, cfg      string
		run            RunFunc
		severity, risk string
	}{
		{"success", "", nil, "info", "low"},
		{"policy denied", "[policy]\ndeny = [\"echo\"]\n", nil, "warning", "medium"},
		{"secret unresolved", "[secrets.S]\nenv = \"TB_UNSET_CLASSIFICATION\"\n[tools.echo]\nsecrets = [\"S\"]\n", nil, "warning", "high"},
		{"panic", "", func(context.Context, Call) (any, error) { panic("boom") }, "error", "high"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg, tc.run, nil)
			_, evs := h.call(t, "echo", `{"text":"hi"}`)
			cl := envelopeOf(t, evs)["classification"].(map[string]any)
			if cl["severity"] != tc.severity || cl["risk"] != tc.risk {
				t.Fatalf("classification %v, want %s/%s", cl, tc.severity, tc.risk)
			}
		})
	}
}

// Replace swaps one source's tools and leaves the others alone; a tool
// that would take another source's id changes nothing.
func TestCatalogReplace(t *testing.T) {
	tool := func(id string) *Tool {
		return &Tool{Descriptor: Descriptor{ID: id}, InputSchema: SchemaFor[struct{}](), Run: func(context.Context, Call) (any, error) { return nil, nil }}
	}
	c, err := NewCatalog(tool("builtin"))
	if err != nil {
		t.Fatal(err)
	}
	added, removed, err := c.Replace("upstream:a", []*Tool{tool("a__x"), tool("a__y")})
	if err != nil || len(added) != 2 || len(removed) != 0 {
		t.Fatalf("first listing: %v %v %v", added, removed, err)
	}
	added, removed, err = c.Replace("upstream:a", []*Tool{tool("a__y"), tool("a__z")})
	if err != nil || len(added) != 1 || added[0] != "a__z" || len(removed) != 1 || removed[0] != "a__x" {
		t.Fatalf("second listing: %v %v %v", added, removed, err)
	}
	if _, _, err := c.Replace("upstream:b", []*Tool{tool("builtin")}); err == nil {
		t.Fatal("an upstream took a built-in tool's id")
	}
	if _, ok := c.Lookup("builtin"); !ok || len(c.Tools()) != 3 {
		t.Fatalf("catalog after a refused replace: %d tools", len(c.Tools()))
	}
}

// F-P4: the approval request holds the arguments whole (redacted), not
// their first 256 bytes: the operator decides on what the call would send
// (past an attribute's size the bridge's payload store keeps them whole).
func TestApprovalRequestHoldsTheWholeArguments(t *testing.T) {
	h := newHarness(t, "[approval]\nmode = \"prompt\"\ntimeout = \"10s\"\n", nil, func(d *Descriptor) { d.Approval = "always" })
	args, _ := json.Marshal(map[string]string{"text": strings.Repeat("SELECT 1; ", 1200) + "DROP TABLE users;"})
	req := h.em.NewID()
	seen := make(chan string, 1)
	go func() {
		for {
			evs, _ := h.st.ByRequest(req)
			for _, e := range evs {
				if e.Kind == events.KindApprovalRequested {
					whole, _ := events.ResolveValue(context.Background(), h.st, e.Attrs.Get("args"))
					seen <- whole
					h.st.Append(context.Background(), []events.Event{{ID: events.NewID(), Time: time.Now(), Kind: events.KindApprovalDecided,
						Boundary: events.BoundaryApproval, RequestID: req, Outcome: events.OK,
						Attrs: events.A(events.AttrApprovalID, e.Attrs.Get(events.AttrApprovalID), events.AttrDecision, events.Deny, events.AttrArgsHash, e.Attrs.Get(events.AttrArgsHash), "by", "operator")}})
					return
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	h.x.Execute(context.Background(), Invocation{Tool: "echo", Args: args, RequestID: req})
	if got := <-seen; got != string(args) {
		t.Fatalf("approval.requested holds %d bytes of the %d-byte arguments: %.80s…", len(got), len(args), got)
	}
}
