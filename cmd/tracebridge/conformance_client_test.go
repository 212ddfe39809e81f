package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tracebridge/tracebridge/hub"
)

// runConformanceClient is the client command of the conformance suite's
// client scenarios, re-executed from this test binary: tracebridge is the
// client under test. It puts the suite's server (the last argument) behind
// `tracebridge mcp` (TB_BIN) as [servers.s] with prefix = false, and plays
// the AI client behind it — declaring elicitation and accepting with
// empty content in the elicitation scenario — listing the tools and
// calling each one.
func runConformanceClient() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "conformance client:", err)
		return 1
	}
	url := os.Args[len(os.Args)-1]
	dir, err := os.MkdirTemp("", "tb-conformance-client-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(dir)
	cfg := filepath.Join(dir, "tracebridge.toml")
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	text := fmt.Sprintf("[servers.s]\nurl = %q\nprefix = false\ntimeout = \"20s\"\napproval = { \"*\" = \"never\" }\n", url)
	var env []string
	if strings.HasPrefix(scenario, "auth/") {
		text += "[servers.s.oauth]\nclient_metadata_url = \"https://conformance-test.local/client-metadata.json\"\n"
		var c struct {
			ClientID     string `json:"client_id"`
			ClientSecret string `json:"client_secret"`
		}
		json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &c)
		if c.ClientID != "" {
			text += fmt.Sprintf("client_id = %q\nclient_secret = \"${secret:CS}\"\n[secrets.CS]\nenv = \"TB_CONFORMANCE_CLIENT_SECRET\"\n", c.ClientID)
			env = append(env, "TB_CONFORMANCE_CLIENT_SECRET="+c.ClientSecret)
		}
	}
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		return fail(err)
	}
	data := filepath.Join(dir, "data")
	if strings.HasPrefix(scenario, "auth/") {
		if err := conformanceLogin(data, cfg, env); err != nil {
			return fail(err)
		}
	}
	cmd := exec.Command(os.Getenv("TB_BIN"), "--data", data, "--log-level", "warn", "mcp", "--config", cfg)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	opts := &sdk.ClientOptions{}
	if strings.HasPrefix(scenario, "elicitation") || strings.HasPrefix(scenario, "sep-2322") {
		opts.ElicitationHandler = func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 25*time.Second)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "conformance-ai-client", Version: "1"}, opts).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, &sdk.ClientSessionOptions{ProtocolVersion: cmp.Or(os.Getenv("TB_CONFORMANCE_PROTOCOL"), "2025-11-25")})
	if err != nil {
		return fail(err)
	}
	defer cs.Close()
	var tools []string
	sample := map[string]map[string]any{} // what a model would fill in: each required argument, by its type
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fail(err)
		}
		if t.Name == "add_numbers" || !slices.Contains(builtinToolNames, t.Name) {
			tools = append(tools, t.Name)
			sample[t.Name] = sampleArgs(t.InputSchema)
		}
	}
	// A scenario may name the calls to make (its context's toolCalls, with
	// their arguments); else each tool is called.
	var sc struct {
		ToolCalls []struct {
			Name      string         `json:"name"`
			Arguments map[string]any `json:"arguments"`
		} `json:"toolCalls"`
	}
	json.Unmarshal([]byte(os.Getenv("MCP_CONFORMANCE_CONTEXT")), &sc)
	calls := map[string]map[string]any{}
	if len(sc.ToolCalls) > 0 {
		tools = tools[:0]
		for _, c := range sc.ToolCalls {
			tools = append(tools, c.Name)
			calls[c.Name] = c.Arguments
		}
	}
	for _, name := range tools {
		args := sample[name]
		if args == nil {
			args = map[string]any{}
		}
		if name == "add_numbers" {
			args = map[string]any{"a": 2, "b": 3}
		}
		if a, ok := calls[name]; ok && a != nil {
			args = a
		}
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		if err == nil && strings.HasPrefix(textOf(res), "UpstreamUnauthorized") && strings.HasPrefix(scenario, "auth/") {
			// As the operator would, told so: log in again, call again.
			fmt.Fprintln(os.Stderr, "conformance client:", textOf(res))
			if err := conformanceLogin(data, cfg, env); err != nil {
				return fail(err)
			}
			res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: name, Arguments: args})
		}
		if err != nil {
			return fail(fmt.Errorf("%s: %w", name, err))
		}
		fmt.Fprintf(os.Stderr, "conformance client: %s answered %q (isError %v)\n", name, textOf(res), res.IsError)
	}
	if strings.HasPrefix(scenario, "auth/") {
		cs.Close()
		if err := tokensStayOut(data); err != nil {
			return fail(err)
		}
	}
	return 0
}

// sampleArgs fills each required argument of an input schema with a value
// of its type, as a model calling the tool would.
func sampleArgs(schema any) map[string]any {
	b, _ := json.Marshal(schema)
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	json.Unmarshal(b, &s)
	out := map[string]any{}
	for _, name := range s.Required {
		switch s.Properties[name].Type {
		case "integer", "number":
			out[name] = 1
		case "boolean":
			out[name] = true
		case "array":
			out[name] = []any{}
		case "object":
			out[name] = map[string]any{}
		default:
			out[name] = "conformance"
		}
	}
	return out
}

// tokensStayOut checks that the stored grant's tokens are nowhere in the
// clear: not in the sealed grant file, the log, or the bridge's log files.
func tokensStayOut(data string) error {
	dir := hub.DataDir(data)
	store, err := openGrantStore(dir)
	if err != nil {
		return err
	}
	g, err := store.LoadGrant("s")
	if err != nil || g == nil || g.Token == nil || g.Token.AccessToken == "" {
		return fmt.Errorf("no grant stored after login: %v", err)
	}
	tail, err := exec.Command(os.Getenv("TB_BIN"), "--data", data, "tail", "--json", "-n", "100000").Output()
	if err != nil {
		return fmt.Errorf("tail: %w", err)
	}
	var files [][]byte
	filepath.WalkDir(data, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, err := os.ReadFile(p); err == nil {
				files = append(files, b)
			}
		}
		return nil
	})
	for _, tok := range []string{g.Token.AccessToken, g.Token.RefreshToken} {
		if tok == "" {
			continue
		}
		if strings.Contains(string(tail), tok) {
			return fmt.Errorf("an OAuth token is in the event log")
		}
		for _, b := range files {
			if strings.Contains(string(b), tok) {
				return fmt.Errorf("an OAuth token is in the clear in a file of the data dir")
			}
		}
	}
	return nil
}

// conformanceLogin runs `tracebridge servers login s` as an operator
// would, with this process as the browser: it opens the authorization URL
// the command prints and follows its redirects (the suite's authorization
// server approves at once) to the command's loopback callback.
func conformanceLogin(data, cfg string, env []string) error {
	cmd := exec.Command(os.Getenv("TB_BIN"), "--data", data, "servers", "login", "s", "--config", cfg, "--no-browser")
	cmd.Env = append(os.Environ(), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	cmd.Stdout = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		fmt.Fprintln(os.Stderr, "login:", line)
		if strings.HasPrefix(line, "http://") || strings.HasPrefix(line, "https://") {
			resp, err := http.Get(line)
			if err != nil {
				fmt.Fprintln(os.Stderr, "login: the browser:", err)
				continue
			}
			resp.Body.Close()
		}
	}
	return cmd.Wait()
}

// builtinToolNames are tracebridge's own tools, which the client scenarios
// do not call.
var builtinToolNames = []string{"regex_text_search", "bm25_text_search", "trace_runs", "trace_replay", "trace_diagram",
	"get_active_document", "get_selection", "get_diagnostics", "list_projects", "present_review", "propose_text_edit", "propose_text_edits"}

// The conformance suite's client scenarios, with tracebridge as the client
// of the suite's servers (the AI client behind it is this test binary).
// initialize, tools_call, the elicitation defaults, sse-retry and every
// auth/* scenario pass.
func TestConformanceClientScenarios(t *testing.T) {
	long(t)
	dir, node := conformanceDir(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(scenario string) map[string]string {
		out := t.TempDir()
		which := []string{"--scenario", scenario}
		if scenario == "auth" {
			which = []string{"--suite", "auth"}
		}
		cmd := exec.Command(node, append(append([]string{filepath.Join(dir, "node_modules", ".bin", "conformance"), "client", "--command", self},
			which...), "-o", out, "--timeout", "40000")...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "TB_CONFORMANCE_CLIENT=1", "TB_BIN="+tbBin)
		log, err := cmd.CombinedOutput()
		if _, ok := err.(*exec.ExitError); err != nil && !ok {
			t.Fatalf("%s: %v\n%s", scenario, err, log)
		}
		checks := readChecks(t, out)
		if len(checks) == 0 {
			t.Logf("%s wrote no checks:\n%s", scenario, log)
		}
		return checks
	}
	must := []string{"initialize", "tools_call", "elicitation-sep1034-client-defaults", "sse-retry"}
	var table strings.Builder
	passed, judged := 0, 0
	for _, sc := range must {
		checks := run(sc)
		if len(checks) == 0 {
			t.Errorf("client scenario %s ran no check", sc)
		}
		for _, id := range sortedKeys(checks) {
			st := checks[id]
			switch {
			case st == "SUCCESS":
				passed++
				judged++
			case strings.HasPrefix(st, "INFO"):
				continue // what the suite saw, not a verdict
			default:
				judged++
				t.Errorf("client scenario %s, check %s: %s", sc, id, st)
			}
			fmt.Fprintf(&table, "%-60s %s\n", id, first(st))
		}
	}
	t.Logf("client scenarios initialize, tools_call, elicitation defaults, sse-retry: %d of %d checks passed\n%s", passed, judged, table.String())

	// The newest suite's client scenarios of 2026-07-28 (the AI client
	// behind on that protocol too): the per-request _meta and headers, the
	// multi-round-trip retries relayed to the AI client and back, the
	// x-mcp-header parameters, a tool whose headers are invalid left out,
	// and every authorization scenario the revision requires.
	next, _, _ := conformanceNextDir(t)
	table.Reset()
	passed, judged = 0, 0
	for _, sc := range []string{"tools_call", "request-metadata", "sep-2322-client-request-state", "http-standard-headers",
		"http-custom-headers", "http-invalid-tool-headers", "json-schema-ref-no-deref",
		// the authorization scenarios: the active suite, and those 2026-07-28 added
		"auth", "auth/resource-mismatch", "auth/offline-access-scope", "auth/offline-access-not-supported",
		"auth/authorization-server-migration", "auth/iss-supported", "auth/iss-not-advertised", "auth/iss-supported-missing",
		"auth/iss-wrong-issuer", "auth/iss-unexpected", "auth/iss-normalized", "auth/metadata-issuer-mismatch"} {
		out := t.TempDir()
		which := []string{"--scenario", sc}
		if sc == "auth" {
			which = []string{"--suite", "auth"}
		}
		cmd := exec.Command(node, append(append([]string{filepath.Join(next, "node_modules", ".bin", "conformance"), "client", "--command", self},
			which...), "--spec-version", "2026-07-28", "-o", out, "--timeout", "40000")...)
		cmd.Dir = next
		cmd.Env = append(os.Environ(), "TB_CONFORMANCE_CLIENT=1", "TB_BIN="+tbBin, "TB_CONFORMANCE_PROTOCOL=2026-07-28")
		if log, err := cmd.CombinedOutput(); err != nil {
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("%s: %v\n%s", sc, err, log)
			}
		}
		checks := readChecks(t, out)
		if len(checks) == 0 {
			t.Errorf("2026-07-28 client scenario %s ran no check", sc)
		}
		for _, id := range sortedKeys(checks) {
			st := checks[id]
			switch {
			case strings.HasPrefix(st, "INFO"), strings.HasPrefix(st, "SKIPPED"):
				continue // what the suite saw, or did not exercise (this AI client asks for no prompt): not a verdict
			case st == "SUCCESS":
				passed++
			default:
				t.Errorf("2026-07-28 client scenario %s, check %s: %s", sc, id, st)
			}
			judged++
			if !strings.HasPrefix(sc, "auth") {
				fmt.Fprintf(&table, "%-60s %s\n", id, first(st))
			}
		}
	}
	t.Logf("2026-07-28 client scenarios (authorization's too): %d of %d checks passed\n%s", passed, judged, table.String())

	// OAuth: each auth/* scenario logs in with `tracebridge servers login`
	// (this process as the browser), then calls through the bridge with
	// the stored grant. A call that needs more scope (step-up) fails
	// UpstreamUnauthorized with the command to run: this client, as an
	// operator told so, logs in again and calls again.
	table.Reset()
	passed, judged = 0, 0
	auth := run("auth")
	for _, id := range sortedKeys(auth) {
		st := auth[id]
		switch {
		case strings.HasPrefix(st, "INFO"):
			continue
		case st == "SUCCESS":
			passed++
		default:
			t.Errorf("auth scenario check %s: %s", id, st)
		}
		judged++
		if st != "SUCCESS" {
			fmt.Fprintf(&table, "%-70s %s\n", id, st)
		}
	}
	if judged < 150 {
		t.Errorf("the auth scenarios ran %d distinct checks; 160 when this test was written", judged)
	}
	t.Logf("auth/* client scenarios: %d of %d checks passed; not passed:\n%s", passed, judged, table.String())
}
