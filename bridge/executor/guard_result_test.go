package executor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// A discovered tool's result is judged by the guard's result rules before
// the client reads it: a secret in it is redacted (guard.result.judged
// names rule result-secret), blocked where [guard] says block
// (ResultBlocked); a result with nothing in it passes untouched and no
// guard event is recorded (the harmless twin).
func TestDiscoveredToolResultsAreJudged(t *testing.T) {
	leak := "ghp_" + strings.Repeat("a1B2", 9) // a GitHub token's shape
	discovered := func(d *Descriptor) { d.Recorded, d.Source = true, "/tools/echo.tool.json" }
	for _, c := range []struct {
		name, cfg, text string
		code            events.Code
		judged          bool
	}{
		{"redacted", "", "token " + leak, "", true},
		{"blocked", "[guard]\nactions = { \"result-secret\" = \"block\" }\n", "token " + leak, events.CodeResultBlocked, true},
		{"harmless", "", "nothing secret here", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, "[policy]\ngrant = [\"text.search\"]\n"+c.cfg, nil, discovered)
			res, evs := h.call(t, "echo", fmt.Sprintf(`{"text":%q}`, c.text))
			if res.Code != c.code {
				t.Fatalf("code %q, want %q (%s)", res.Code, c.code, res.Message)
			}
			shown := fmt.Sprint(res.Value, res.Message)
			if strings.Contains(shown, leak) {
				t.Fatalf("the secret reached the client: %s", shown)
			}
			if c.name == "harmless" && fmt.Sprint(res.Value) != fmt.Sprint(map[string]string{"text": c.text}) {
				t.Fatalf("a harmless result changed: %v", res.Value)
			}
			var judged []events.Event
			for _, e := range evs {
				if e.Kind == events.KindGuardResult {
					judged = append(judged, e)
				}
			}
			if c.judged != (len(judged) == 1) || c.judged && (judged[0].Attrs.Get(events.AttrRule) != "result-secret" || judged[0].Code != c.code) {
				t.Fatalf("guard.result.judged: %v", judged)
			}
		})
	}
	// A tool of the bridge's own is judged by its host, not here: its
	// result passes as it was.
	h := newHarness(t, "[policy]\ngrant = [\"text.search\"]\n", nil, nil)
	if res, evs := h.call(t, "echo", fmt.Sprintf(`{"text":%q}`, "token "+leak)); !res.OK() || strings.Contains(kinds(evs), events.KindGuardResult) {
		t.Fatalf("a built-in tool's result: %+v %s", res, kinds(evs))
	}
}
