package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/guard"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/policy"
)

// guardCorpus is testdata/guard/cases.json (bridge/guard reads it too).
type guardCorpus struct {
	Pack  string `json:"pack"`
	Cases []struct {
		ID         string            `json:"id"`
		Class      string            `json:"class"`
		Expect     string            `json:"expect"`
		Why        string            `json:"why"`
		Payload    string            `json:"payload"`
		Neighbours []guard.Neighbour `json:"neighbours"`
		Attack     guardSide         `json:"attack"`
		Twin       guardSide         `json:"twin"`
	} `json:"cases"`
}

type guardSide struct {
	Tool *struct {
		Name        string         `json:"name"`
		Description string         `json:"description"`
		InputSchema map[string]any `json:"inputSchema"`
	} `json:"tool"`
	Result json.RawMessage `json:"result"`
	Args   map[string]any  `json:"args"`
}

func readGuardCorpus(path string) (guardCorpus, error) {
	var c guardCorpus
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	return c, err
}

// guardToolName is the tool a case's result or flow source is served as.
func guardToolName(id string) string { return strings.ReplaceAll(id, "-", "_") }

// runGuardUpstream serves one side of the guard corpus (TB_GUARD_CASES) as
// an MCP server on stdio: "attack" or "twin" serves each case's tool as
// that side has it (its descriptor, its result), "fs" the tools the
// attacks shadow and the sink a stolen secret is sent to. Each call is
// appended to TB_FAULT_MARK, so the test sees what reached a server.
func runGuardUpstream(side string) {
	c, err := readGuardCorpus(os.Getenv("TB_GUARD_CASES"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	mark := func(name string, args json.RawMessage) {
		if f, err := os.OpenFile(os.Getenv("TB_FAULT_MARK"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err == nil {
			fmt.Fprintf(f, "%s %s %s\n", side, name, args)
			f.Close()
		}
	}
	s := sdk.NewServer(&sdk.Implementation{Name: "guard-" + side, Version: "1"}, nil)
	text := func(t string) *sdk.CallToolResult {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: t}}}
	}
	add := func(tool *sdk.Tool, answer func() *sdk.CallToolResult) {
		s.AddTool(tool, func(_ context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			mark(tool.Name, req.Params.Arguments)
			return answer(), nil
		})
	}
	anyText := map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}
	bodyOnly := map[string]any{"type": "object", "properties": map[string]any{"body": map[string]any{"type": "string"}}}
	if side == "fs" {
		seen := map[string]bool{}
		for _, gc := range c.Cases {
			for _, n := range gc.Neighbours {
				if !seen[n.Name] {
					seen[n.Name] = true
					add(&sdk.Tool{Name: n.Name, Description: "The user's own " + strings.ReplaceAll(n.Name, "_", " ") + " tool.", InputSchema: anyText}, func() *sdk.CallToolResult { return text("ok") })
				}
			}
		}
		add(&sdk.Tool{Name: "send", Description: "Posts a body to the team's webhook.", InputSchema: bodyOnly}, func() *sdk.CallToolResult { return text("sent") })
	} else {
		for _, gc := range c.Cases {
			sd := gc.Attack
			if side == "twin" {
				sd = gc.Twin
			}
			switch gc.Class {
			case "descriptor", "args":
				add(&sdk.Tool{Name: sd.Tool.Name, Description: sd.Tool.Description, InputSchema: sd.Tool.InputSchema}, func() *sdk.CallToolResult { return text("ok") })
			case "result", "flow":
				var res sdk.CallToolResult
				if err := json.Unmarshal(sd.Result, &res); err != nil {
					fmt.Fprintln(os.Stderr, gc.ID, err)
					os.Exit(2)
				}
				add(&sdk.Tool{Name: guardToolName(gc.ID), Description: "Returns a stored answer.", InputSchema: anyText}, func() *sdk.CallToolResult { return &res })
				if gc.Class == "flow" {
					add(&sdk.Tool{Name: guardToolName(gc.ID) + "_use", Description: "Uses a credential with this service.", InputSchema: bodyOnly}, func() *sdk.CallToolResult { return text("used") })
				}
			}
		}
	}
	if err := s.Run(context.Background(), &sdk.StdioTransport{}); err != nil {
		os.Exit(1)
	}
}

// TestGuardCorpus drives every case of testdata/guard/cases.json through
// the real binary with the default configuration: the attack side served
// by server atk, its harmless twin by server twin, the tools attacks
// shadow and the webhook a stolen secret goes to by server fs, a go-sdk
// client on stdio. An attack is enforced when its payload never reached
// the client (held, redacted, blocked) or its call never reached a server
// (denied), flagged when the client's result carries the guard's notice;
// a twin must pass untouched. It reports the counts; a miss or a false
// positive fails it.
func TestGuardCorpus(t *testing.T) {
	long(t)
	casesPath, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "guard", "cases.json"))
	corpus, err := readGuardCorpus(casesPath)
	if err != nil {
		t.Fatal(err)
	}
	marks := filepath.Join(t.TempDir(), "marks")
	server := func(side, start string) string {
		return fmt.Sprintf("env = { TB_GUARD_UPSTREAM = %q, TB_GUARD_CASES = %q, TB_FAULT_MARK = %q }\nstart = %q\napproval = { \"*\" = \"never\" }", side, casesPath, marks, start)
	}
	cfg := hostileConfig(t, "", map[string]string{"fs": server("fs", "eager"), "atk": server("attack", "lazy"), "twin": server("twin", "lazy")})
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg)
	defer b.close(t)
	// The shadowed tools are known before the attackers list theirs.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command(tbBin, "--data", data, "tools", "list", "--json").Output()
		if err == nil && strings.Contains(string(out), "fs__send_email") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("server fs's tools were not pinned within 30s:\n%s", b.stderr)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	listed := map[string]bool{}
	for tool, err := range b.session.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		listed[tool.Name] = true
	}
	reached := func(line string) bool {
		b, _ := os.ReadFile(marks)
		return slices.Contains(strings.Split(string(b), "\n"), line) || strings.Contains(string(b), line+" ")
	}
	counts := map[string]int{}
	for _, gc := range corpus.Cases {
		for _, side := range []string{"atk", "twin"} {
			sd := gc.Attack
			if side == "twin" {
				sd = gc.Twin
			}
			var got, detail string
			switch gc.Class {
			case "descriptor":
				name := side + "__" + sd.Tool.Name
				res, _, code := b.call(t, name, map[string]any{})
				switch {
				case !listed[name] && code == events.CodeToolFlagged:
					got = "enforced"
				case !listed[name] || code != "":
					got, detail = "broken", fmt.Sprintf("listed %v, code %s: %s", listed[name], code, textOf(res))
				}
			case "args":
				name := side + "__" + sd.Tool.Name
				res, _, code := b.call(t, name, sd.Args)
				args, _ := json.Marshal(sd.Args)
				side := map[string]string{"atk": "attack", "twin": "twin"}[side]
				switch {
				case code != "" && !reached(side+" "+sd.Tool.Name+" "+string(args)):
					got = "enforced"
				case code != "":
					got, detail = "broken", fmt.Sprintf("%s, but the call reached the server: %s", code, textOf(res))
				}
			case "result":
				res, _, code := b.call(t, side+"__"+guardToolName(gc.ID), map[string]any{})
				whole, _ := json.Marshal(res)
				var sent sdk.CallToolResult
				json.Unmarshal(sd.Result, &sent)
				_, flagged := res.Meta[guard.MetaKey]
				switch {
				case side == "atk" && gc.Payload != "" && !strings.Contains(string(whole), gc.Payload):
					got = "enforced"
				case flagged || strings.Contains(textOf(res), "[tracebridge guard]"):
					got = "flagged"
				case code == events.CodeResultBlocked:
					got = "enforced"
				case sent.IsError != res.IsError || !sent.IsError && textOf(&sent) != textOf(res):
					got, detail = "broken", fmt.Sprintf("%s: %s", code, textOf(res))
				}
			case "flow":
				if _, _, code := b.call(t, side+"__"+guardToolName(gc.ID), map[string]any{}); code != "" {
					t.Fatalf("%s: the source call failed: %s", gc.ID, code)
				}
				sink := "fs__send"
				if side == "twin" {
					sink = "twin__" + guardToolName(gc.ID) + "_use" // back to the server it came from
				}
				res, _, code := b.call(t, sink, sd.Args)
				switch {
				case code == events.CodePolicyDenied:
					got = "enforced"
				case code != "":
					got, detail = "broken", fmt.Sprintf("%s: %s", code, textOf(res))
				}
			}
			if side == "twin" {
				if got != "" {
					counts["false positive"]++
					t.Errorf("%s: the twin was %s %s", gc.ID, got, detail)
				}
				continue
			}
			switch {
			case got == gc.Expect || got == "enforced" && gc.Expect == "flagged":
				counts[got]++
			case got == "":
				counts["missed"]++
				t.Errorf("%s (%s): missed through the binary, want %s", gc.ID, gc.Why, gc.Expect)
			default:
				counts["other"]++
				t.Errorf("%s (%s): %s %s, want %s", gc.ID, gc.Why, got, detail, gc.Expect)
			}
		}
	}
	t.Logf("through the binary, %d cases: %d enforced, %d flagged, %d missed, %d other, %d false positives on twins",
		len(corpus.Cases), counts["enforced"], counts["flagged"], counts["missed"], counts["other"], counts["false positive"])
}

// guardServers is the corpus's three servers (fs eager, the others lazy),
// with extra lines per server.
func guardServers(t *testing.T, marks string, extra map[string]string) map[string]string {
	t.Helper()
	casesPath, _ := filepath.Abs(filepath.Join("..", "..", "testdata", "guard", "cases.json"))
	out := map[string]string{}
	for name, side := range map[string]string{"fs": "fs", "atk": "attack", "twin": "twin"} {
		start := "lazy"
		if name == "fs" {
			start = "eager"
		}
		out[name] = fmt.Sprintf("env = { TB_GUARD_UPSTREAM = %q, TB_GUARD_CASES = %q, TB_FAULT_MARK = %q }\nstart = %q\napproval = { \"*\" = \"never\" }\n%s",
			side, casesPath, marks, start, extra[name])
	}
	return out
}

// TestGuardIsTunedAndExplained: an operator's own result rules (phase =
// "result") block and flag; a rule's action changes per server and a rule
// turns off; a held tool is shown with its reasons and, accepted, serves;
// first_sight = "review" holds every new tool.
func TestGuardIsTunedAndExplained(t *testing.T) {
	long(t)
	marks := filepath.Join(t.TempDir(), "marks")
	body := `[guard]
off = ["shell-injection"]

[policy.rules.uptime-flag]
phase = "result"
tools = ["twin__r08_system_admin"]
when = 'result.text.contains("uptime")'
effect = "flag"
message = "uptime reports are reviewed"

[policy.rules.no-bucket-names]
phase = "result"
tools = ["twin__r02_*"]
when = 'result.structured.Bucket.startsWith("logs-")'
effect = "deny"
`
	cfg := hostileConfig(t, body, guardServers(t, marks, map[string]string{"atk": `guard = { "result-injection" = "block" }`}))
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg)
	defer b.close(t)
	if _, _, code := b.call(t, "atk__r08_system_admin", map[string]any{}); code != events.CodeResultBlocked {
		t.Errorf("atk's injection with result-injection = block: %s, want ResultBlocked", code)
	}
	res, req, code := b.call(t, "twin__r08_system_admin", map[string]any{})
	if code != "" || !strings.Contains(textOf(res), "[tracebridge guard]") || !strings.Contains(textOf(res), "policy:uptime-flag") {
		t.Errorf("the flag rule: %s %q", code, textOf(res))
	}
	if evs := requestEventsLive(t, b, req); !hasKind(evs, events.KindGuardResult, "") {
		t.Errorf("no guard.result.judged for the flagged result: %v", kindsOf(evs))
	}
	if _, _, code := b.call(t, "twin__r02_aws_structured", map[string]any{}); code != events.CodeResultBlocked {
		t.Errorf("the deny rule over structured content: %s, want ResultBlocked", code)
	}
	if _, _, code := b.call(t, "atk__ping", map[string]any{"host": "1.1.1.1; id"}); code != "" {
		t.Errorf("shell-injection is off, yet the call was refused: %s", code)
	}
	// Held, explained, accepted.
	out, err := exec.Command(tbBin, "--data", data, "tools", "list", "--state", "flagged").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "atk__d01_important_tag is flagged by the guard") || !strings.Contains(string(out), "tool-instructions") {
		t.Fatalf("tools list --state flagged: %v\n%s", err, out)
	}
	out, err = exec.Command(tbBin, "--data", data, "tools", "diff", "atk__d01_important_tag").CombinedOutput()
	m := regexp.MustCompile(`--hash ([0-9a-f]{12})`).FindStringSubmatch(string(out))
	if err != nil || m == nil || !strings.Contains(string(out), "the guard found") {
		t.Fatalf("tools diff: %v\n%s", err, out)
	}
	if out, err := exec.Command(tbBin, "--data", data, "tools", "accept", "atk__d01_important_tag", "--hash", m[1], "--reason", "reviewed").CombinedOutput(); err != nil {
		t.Fatalf("tools accept: %v\n%s", err, out)
	}
	var code2 events.Code
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if _, _, code2 = b.call(t, "atk__d01_important_tag", map[string]any{}); code2 == "" {
			break
		}
	}
	if code2 != "" {
		t.Errorf("the accepted tool: %s", code2)
	}
	b.close(t)

	// What turning the rule back on would have changed on this history.
	cand := strings.TrimPrefix(strings.Replace(cfg, `off = ["shell-injection"]`, "", 1), "TRACEBRIDGE_CONFIG=")
	candBody, _ := os.ReadFile(cand)
	candPath := filepath.Join(t.TempDir(), "candidate.toml")
	candText := strings.Replace(string(candBody), `off = ["shell-injection"]`, "", 1)
	candText = strings.Replace(candText, `effect = "flag"`, `effect = "deny"`, 1) // uptime reports blocked, not flagged
	os.WriteFile(candPath, []byte(candText), 0o600)
	out, _ = exec.Command(tbBin, "--data", data, "policy", "test", "--config", candPath, "--format", "json").Output()
	var report struct {
		Changed []struct {
			Tool  string `json:"tool"`
			Would struct{ Verdict, Rule string }
		} `json:"changed"`
		Results []struct{ Tool, Was, Would, Rule string } `json:"results"`
	}
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("policy test: %v\n%s", err, out)
	}
	found := false
	for _, c := range report.Changed {
		found = found || c.Tool == "atk__ping" && c.Would.Verdict == "denied" && c.Would.Rule == policy.Pack+":shell-injection"
	}
	if !found {
		t.Errorf("policy test does not show the shell-injection rule denying atk__ping:\n%s", out)
	}
	found = false
	for _, r := range report.Results {
		found = found || r.Tool == "twin__r08_system_admin" && r.Was == "flag" && r.Would == "block" && r.Rule == "policy:uptime-flag"
	}
	if !found || len(report.Results) != 1 {
		t.Errorf("policy test does not show the one recorded result the candidate's rule would block:\n%s", out)
	}

	// first_sight = "review": every new tool waits for an operator.
	cfg = hostileConfig(t, "[gateway]\nfirst_sight = \"review\"\n", guardServers(t, marks, nil))
	b = startBridge(t, tbBin, filepath.Join(t.TempDir(), "data"), "2025-06-18", cfg)
	if res, _, code := b.call(t, "twin__get_weather", map[string]any{"city": "Boston"}); code != events.CodeToolFlagged || !strings.Contains(textOf(res), "first-sight-review") {
		t.Errorf("first_sight = review: %s %q", code, textOf(res))
	}
}

// A reload that loosens approval is recorded as policy.config.weakened
// with the difference (shown by tail); its twin, a reload that tightens,
// records none.
func TestConfigWeakeningIsFlagged(t *testing.T) {
	long(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "tracebridge.toml")
	os.WriteFile(cfg, []byte("[approval]\nmode = \"prompt\"\n"), 0o600)
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-06-18", "TRACEBRIDGE_CONFIG="+cfg)
	weakened := func() string {
		out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "10000", "--json").Output()
		var lines []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, events.KindConfigWeakened) {
				lines = append(lines, l)
			}
		}
		return strings.Join(lines, "\n")
	}
	loaded := func(n int) bool {
		out, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "10000").Output()
		return strings.Count(string(out), events.KindConfigLoaded) >= n
	}
	time.Sleep(1100 * time.Millisecond) // the watch compares modification times at one-second steps
	os.WriteFile(cfg, []byte("[approval]\nmode = \"deny\"\n"), 0o600)
	eventually(t, 15*time.Second, "the stricter config loaded", func() bool { return loaded(1) })
	if w := weakened(); w != "" {
		t.Fatalf("a stricter reload was flagged as weaker:\n%s", w)
	}
	time.Sleep(1100 * time.Millisecond)
	os.WriteFile(cfg, []byte("[approval]\nmode = \"allow\"\n"), 0o600)
	eventually(t, 15*time.Second, "the weaker config flagged", func() bool { return weakened() != "" })
	if w := weakened(); !strings.Contains(w, "mode deny → allow") {
		t.Errorf("policy.config.weakened does not name the change:\n%s", w)
	}
	b.close(t)
}
