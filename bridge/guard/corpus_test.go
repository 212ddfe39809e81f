package guard_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// corpus is testdata/guard/cases.json: hostile cases, each with a twin.
type corpus struct {
	Pack  string      `json:"pack"`
	Cases []guardCase `json:"cases"`
}

type guardCase struct {
	ID         string            `json:"id"`
	Class      string            `json:"class"`
	Expect     string            `json:"expect"`
	Why        string            `json:"why"`
	Payload    string            `json:"payload"`
	Secret     string            `json:"secret"`
	Neighbours []guard.Neighbour `json:"neighbours"`
	Attack     side              `json:"attack"`
	Twin       side              `json:"twin"`
}

type side struct {
	Tool   *wireTool       `json:"tool"`
	Result json.RawMessage `json:"result"`
	Args   json.RawMessage `json:"args"`
}

type wireTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

func loadCorpus(t *testing.T) corpus {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "guard", "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c corpus
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if c.Pack != policy.Pack {
		t.Fatalf("the corpus is for %s, the pack is %s", c.Pack, policy.Pack)
	}
	return c
}

// verdict is what the guard did with one side of a case: enforced (held,
// denied, redacted or blocked), flagged, or nothing.
func verdict(t *testing.T, c guardCase, s side, server string, flows *guard.Flows, red *events.Redactor) (string, []guard.Finding) {
	t.Helper()
	switch c.Class {
	case "descriptor":
		fs := guard.Descriptor(guard.Tool{Server: server, Name: s.Tool.Name, Description: s.Tool.Description, Schema: s.Tool.InputSchema}, c.Neighbours, guard.Default)
		if guard.Worst(fs) == policy.ActionBlock {
			return "enforced", fs
		}
		return outcome(fs), fs
	case "args":
		fs := guard.Args(guard.Call{Server: server, Tool: s.Tool.Name, Description: s.Tool.Description, Schema: s.Tool.InputSchema, Args: s.Args}, guard.Default)
		if guard.Worst(fs) == policy.ActionBlock {
			return "enforced", fs
		}
		return outcome(fs), fs
	case "result":
		var res sdk.CallToolResult
		if err := json.Unmarshal(s.Result, &res); err != nil {
			t.Fatalf("%s: %v", c.ID, err)
		}
		j := guard.Result(server, &res, red, guard.Default, nil)
		if j.Result == nil {
			return "enforced", j.Findings
		}
		out, _ := json.Marshal(j.Result)
		in, _ := json.Marshal(&res)
		if c.Payload != "" && !strings.Contains(string(out), c.Payload) && strings.Contains(string(in), c.Payload) {
			return "enforced", j.Findings
		}
		return outcome(j.Findings), j.Findings
	case "flow":
		var res sdk.CallToolResult
		json.Unmarshal(s.Result, &res)
		session := events.NewID()
		j := guard.Result("vault", &res, red, guard.Default, nil)
		flows.Remember(session, "vault", events.NewID(), j.Secrets)
		to := "webhook"
		if server == "twin" {
			to = "vault" // the twin sends it back where it came from
		}
		if f, _, ok := flows.Check(session, to, s.Args, guard.Default, red.Fingerprint); ok {
			return "enforced", []guard.Finding{f}
		}
		return "", nil
	}
	t.Fatalf("%s: unknown class %q", c.ID, c.Class)
	return "", nil
}

func outcome(fs []guard.Finding) string {
	if len(fs) > 0 {
		return "flagged"
	}
	return ""
}

// TestCorpus judges every case of the corpus with the pack's defaults:
// each attack is enforced or flagged as its case expects, and no twin
// gives a finding at all (0 false positives is the bar).
func TestCorpus(t *testing.T) {
	c := loadCorpus(t)
	if len(c.Cases) < 40 {
		t.Fatalf("the corpus has %d cases; at least 40", len(c.Cases))
	}
	red := events.NewRedactor([]byte("corpus-test-key-0123456789abcdef"))
	flows := guard.NewFlows()
	counts := map[string]int{}
	for _, gc := range c.Cases {
		got, fs := verdict(t, gc, gc.Attack, "atk", flows, red)
		switch {
		case got == gc.Expect || got == "enforced" && gc.Expect == "flagged":
			counts[got]++
		case got == "":
			counts["missed"]++
			t.Errorf("%s (%s): missed, want %s", gc.ID, gc.Why, gc.Expect)
		default:
			counts["weaker"]++
			t.Errorf("%s (%s): %s, want %s: %+v", gc.ID, gc.Why, got, gc.Expect, fs)
		}
		if got, fs := verdict(t, gc, gc.Twin, "twin", flows, red); got != "" {
			counts["false positive"]++
			t.Errorf("%s: the twin was %s: %+v", gc.ID, got, fs)
		}
	}
	t.Logf("%d cases: %d enforced, %d flagged, %d missed, %d weaker than expected, %d false positives on twins",
		len(c.Cases), counts["enforced"], counts["flagged"], counts["missed"], counts["weaker"], counts["false positive"])
}
