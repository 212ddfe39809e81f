package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/bridge/upstream"
	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/internal/testenv"
	"github.com/tracebridge/tracebridge/projections"
)

// conformanceNextDir holds the conformance suite's newest release and its
// reference server (testdata/conformance/next, installed by .ci/deps with
// npm ci; the Node 24 of testdata/conformance runs them).
func conformanceNextDir(t *testing.T) (dir, node, tsx string) {
	t.Helper()
	parent, node := conformanceDir(t)
	dir = filepath.Join(parent, "next")
	tsx = filepath.Join(dir, "node_modules", ".bin", "tsx")
	if _, err := os.Stat(tsx); err != nil {
		t.Fatalf("the newest conformance suite is not installed (%v): run `bash .ci/deps` (npm ci in %s), then test again", err, dir)
	}
	return dir, node, tsx
}

// Through equals direct on both protocol revisions: the suite's newest
// release (0.2.0-alpha.12) runs each requirement set at its own wire
// against its reference server directly and through `tracebridge mcp
// --http`, in the same run. Every check that passes directly passes
// through.
func TestConformanceNextThroughTheGateway(t *testing.T) {
	long(t)
	dir, node, tsx := conformanceNextDir(t)
	ref := startReference(t, dir, node, tsx, "everything-server.ts")
	cfg := writeConfig(t, fmt.Sprintf("[servers.cf]\nurl = %q\nprefix = false\napproval = { \"*\" = \"never\" }\n", ref))
	data := filepath.Join(t.TempDir(), "data")
	bridgeURL, token, stderr, _ := startHTTPBridge(t, data, cfg)
	front := frontDoorProxy(t, bridgeURL, token)
	for _, rev := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(rev, func(t *testing.T) {
			direct := conformanceChecks(t, dir, node, ref, "--requirements", rev)
			through := conformanceChecks(t, dir, node, front, "--requirements", rev)
			againAlone(t, direct, through, func(sc string) map[string]string {
				return conformanceChecks(t, dir, node, front, "--scenario", sc, "--spec-version", rev)
			})
			compareConformance(t, direct, through)
		})
	}
	// What the suite sent malformed on the stateless protocol (no header,
	// no _meta, a header that disagrees) was refused before any session,
	// and recorded with its code.
	if n := countCode(t, data, events.KindMCPHTTPRejected, events.CodeInvalidRequest); n == 0 {
		t.Error("no mcp.http.rejected event with InvalidRequest: the front door's stateless refusals are not on the record")
	}
	if t.Failed() {
		t.Logf("bridge stderr:\n%s", stderr.String())
	}
}

// A 2026-07-28 client over stdio calls a tool whose server asks for input
// (multi-round-trip): the server's input request reaches the client in
// the result, the client's retry carries its answer back, and the call
// completes. Both round trips are in the client's session: exported, it
// re-drives with no drift. A stateless request over HTTP does too.
func TestMultiRoundTripRecordsAndReDrives(t *testing.T) {
	long(t)
	dir, node, tsx := conformanceNextDir(t)
	ref := startReference(t, dir, node, tsx, "everything-server.ts")
	cfg := writeConfig(t, fmt.Sprintf("[servers.cf]\nurl = %q\nprefix = false\napproval = { \"*\" = \"never\" }\n", ref))
	data := filepath.Join(t.TempDir(), "data")
	cmd := exec.Command(tbBin, "--data", data, "--log-level", "warn", "mcp")
	cmd.Env = append(append(os.Environ(), "XDG_CONFIG_HOME="+t.TempDir()), cfg)
	stderr := &testenv.Buffer{}
	cmd.Stderr = stderr
	asked := 0
	c := sdk.NewClient(&sdk.Implementation{Name: "mrtr", Version: "1"}, &sdk.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			asked++
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}, nil
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "test_input_required_result_elicitation", Arguments: map[string]any{}})
	if err != nil {
		t.Fatalf("call: %v\n%s", err, stderr)
	}
	if got := textOf(res); got != "Hello, Ada!" || asked != 1 {
		t.Fatalf("the call came to %q after %d elicitations; want \"Hello, Ada!\" after 1\n%s", got, asked, stderr)
	}
	// What reaches the server is each request's own capabilities: this
	// client declared no sampling for its session, so the server refuses
	// the tool (-32021, relayed as the server sent it) until a request
	// declares sampling itself.
	_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "test_missing_capability", Arguments: map[string]any{}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32021 {
		t.Fatalf("a call needing sampling from a client without it: %v, want the server's -32021", err)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "test_missing_capability", Arguments: map[string]any{},
		Meta: sdk.Meta{sdk.MetaKeyClientCapabilities: map[string]any{"sampling": map[string]any{}}}})
	if err != nil || textOf(res) != "Success" {
		t.Fatalf("a request declaring sampling itself: %v %v", err, res)
	}
	cs.Close()

	cli := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tracebridge %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	var runs []struct {
		SessionID string `json:"sessionId"`
		Status    string `json:"status"`
	}
	for line := range strings.Lines(cli("runs", "--json", "--tool", "test_input_required_result_elicitation")) {
		var r struct {
			SessionID string `json:"sessionId"`
			Status    string `json:"status"`
		}
		if json.Unmarshal([]byte(line), &r) == nil && r.SessionID != "" {
			runs = append(runs, r)
		}
	}
	if len(runs) != 2 || runs[0].SessionID != runs[1].SessionID || runs[0].Status != "ok" || runs[1].Status != "ok" {
		t.Fatalf("the two round trips are not two ok runs of one session: %+v", runs)
	}
	// The second round names the first: one call in the evidence.
	out, err := exec.Command(tbBin, "--data", data, "tail", "-n", "100000", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var rounds []events.Event
	for line := range strings.Lines(string(out)) {
		var e events.Event
		if json.Unmarshal([]byte(line), &e) == nil && e.Kind == events.KindUpstreamResponse && e.Attrs.Get(projections.AttrUpTool) == "test_input_required_result_elicitation" {
			rounds = append(rounds, e)
		}
	}
	if len(rounds) != 2 || rounds[0].Attrs.Get(upstream.AttrRound) != "" || rounds[1].Attrs.Get(upstream.AttrRound) != "2" ||
		rounds[1].Attrs.Get(upstream.AttrRoundOf) != rounds[0].RequestID.String() || rounds[1].RequestID == rounds[0].RequestID {
		t.Fatalf("the retry's upstream answer does not name the call's first round: %+v", rounds)
	}
	file := filepath.Join(t.TempDir(), "mrtr.jsonl")
	cli("session", "export", runs[0].SessionID, "-o", file, "--name", "mrtr")
	if b, _ := os.ReadFile(file); !strings.Contains(string(b), "input_required") || !strings.Contains(string(b), "inputResponses") {
		t.Fatalf("the exported session lacks the input request or the retry's answers:\n%.2000s", b)
	}
	if out, err := exec.Command(tbBin, "session", "replay", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "no drift") {
		b, _ := os.ReadFile(file)
		t.Fatalf("the multi-round-trip session does not re-drive cleanly: %v\n%s\nfile:\n%.4000s", err, out, b)
	}

	// A stateless request over HTTP is a session of its own: it exports
	// and re-drives the same way.
	hdata := filepath.Join(t.TempDir(), "data")
	url, token, _, _ := startHTTPBridge(t, hdata, cfg)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), `"resultType":"complete"`) {
		t.Fatalf("the stateless call: HTTP %d %s", resp.StatusCode, answer)
	}
	data = hdata
	line := strings.SplitN(cli("runs", "--json", "--limit", "1", "--tool", "test_simple_text"), "\n", 2)[0]
	var r struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal([]byte(line), &r); err != nil || r.SessionID == "" {
		t.Fatalf("runs: %q %v", line, err)
	}
	file = filepath.Join(t.TempDir(), "stateless.jsonl")
	cli("session", "export", r.SessionID, "-o", file, "--name", "stateless")
	if out, err := exec.Command(tbBin, "session", "replay", file).CombinedOutput(); err != nil || !strings.Contains(string(out), "no drift") {
		b, _ := os.ReadFile(file)
		t.Fatalf("the stateless request's session does not re-drive cleanly: %v\n%s\nfile:\n%.4000s", err, out, b)
	}
}
