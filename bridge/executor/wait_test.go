package executor

import (
	"context"
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/tracebridge/tracebridge/config"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/projections"
	"github.com/tracebridge/tracebridge/store/storetest"
)

// The approval wait on a fake clock (testing/synctest): with no decision
// the call times out at its deadline to the microsecond, and the recorded
// wait is the timeout; an operator's decision two minutes in releases it,
// and that decision records the two minutes. No wall-clock time passes.
func TestApprovalWaitOnAFakeClock(t *testing.T) {
	for _, tc := range []struct {
		name   string
		decide time.Duration // 0: nobody decides
		code   events.Code
		waited time.Duration
	}{
		{"nobody decides", 0, events.CodeApprovalTimeout, 5 * time.Minute},
		{"an operator approves after 2m", 2 * time.Minute, "", 2 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				log := storetest.Open(t)
				cat, err := NewCatalog(&Tool{Descriptor: Descriptor{ID: "ship", Category: "test", Source: "builtin", Capabilities: []string{config.CapTextSearch}, Approval: "always"},
					InputSchema: SchemaFor[echoArgs](), Run: func(context.Context, Call) (any, error) { return "shipped", nil }})
				if err != nil {
					t.Fatal(err)
				}
				cfg, err := config.Parse("tracebridge.toml", []byte("[approval]\nmode = \"prompt\"\ntimeout = \"5m\"\n"))
				if err != nil {
					t.Fatal(err)
				}
				x := New(Options{Catalog: cat, Emitter: log.Emitter, Log: logReader{log.Store}, Config: cfg, Logger: quiet, PollEvery: time.Second})
				req := log.Emitter.NewID()
				if tc.decide > 0 {
					go func() { // the operator, in another process in real life
						time.Sleep(tc.decide)
						evs, _ := log.Store.ByRequest(req)
						for _, e := range evs {
							if e.Kind == events.KindApprovalRequested {
								p := projections.Approval{ID: e.Attrs.Get(events.AttrApprovalID), RequestID: req, ArgsHash: e.Attrs.Get(events.AttrArgsHash), Requested: e.Time}
								log.Emitter.Emit(projections.Decision(p, events.Approve, "operator", "", time.Now()))
								log.Emitter.Flush(context.Background(), req)
							}
						}
					}()
				}
				t0 := time.Now()
				res := x.Execute(context.Background(), Invocation{Tool: "ship", Args: json.RawMessage(`{"text":"v2"}`), RequestID: req})
				if res.Code != tc.code {
					t.Fatalf("result %+v, want code %q", res, tc.code)
				}
				if took := time.Since(t0); took < tc.waited || took > tc.waited+2*time.Second {
					t.Fatalf("the call returned after %v of fake time, want %v", took, tc.waited)
				}
				log.Emitter.Flush(context.Background(), req)
				evs, _ := log.Store.ByRequest(req)
				var decided []events.Event
				for _, e := range evs {
					if e.Kind == events.KindApprovalDecided {
						decided = append(decided, e)
					}
				}
				if len(decided) != 1 || decided[0].DurationMs != events.Ms(tc.waited) {
					t.Fatalf("decisions %+v, want one that waited %v", decided, tc.waited)
				}
			})
		})
	}
}
