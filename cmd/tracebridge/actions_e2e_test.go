package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// One code, one action: for every code a call can end with here, the
// audit envelope, the verdict and the UI's run page say the same action,
// the one events.ActionFor gives; the tool result says the code and what
// a model can do (events.HintFor), never the operator's action.
func TestOneActionPerCodeEverywhere(t *testing.T) {
	base := t.TempDir()
	data := filepath.Join(base, "data")
	os.MkdirAll(filepath.Join(base, "ws"), 0o755)
	start(t, tbBin, data, "serve", "--ui", "127.0.0.1:0")
	url := uiURL(t, data)
	b := startBridge(t, tbBin, data, "2025-06-18", writeConfig(t, "[policy]\ndeny = [\"bm25_text_search\"]\n"+
		"[secrets.K]\nenv = \"TB_UNSET_FOR_ACTIONS\"\n[tools.list_projects]\nsecrets = [\"K\"]\n"))
	entries := []any{map[string]string{"id": "a", "text": "x"}}
	calls := []struct {
		tool string
		args any
		code events.Code
	}{
		{"bm25_text_search", map[string]any{"query": "x", "entries": entries}, events.CodePolicyDenied},
		{"no_such_tool", map[string]any{}, events.CodeUnknownTool},
		{"regex_text_search", map[string]any{"pattern": "(", "text": "x"}, events.CodeInvalidArguments},
		{"get_selection", map[string]any{}, events.CodePipeUnavailable},
		{"list_projects", map[string]any{}, events.CodeSecretUnresolved},
	}
	jar, _ := cookiejar.New(nil)
	ui := &http.Client{Jar: jar, Transport: localhostTransport}
	if resp, err := ui.Get(url); err == nil {
		resp.Body.Close()
	}
	root := strings.SplitN(url, "/?", 2)[0]
	for _, c := range calls {
		res, req, code := b.call(t, c.tool, c.args)
		if code != c.code {
			t.Errorf("%s: code %s, want %s (%s)", c.tool, code, c.code, textOf(res))
			continue
		}
		want := events.ActionFor(code)
		var sc struct {
			Error struct{ Hint string } `json:"error"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(raw, &sc)
		out, err := exec.Command(tbBin, "--data", data, "replay", req.String(), "--format", "json").Output()
		if err != nil {
			t.Fatalf("replay %s: %v", req, err)
		}
		var run struct {
			Verdict struct{ Action string }
			Events  []events.Event
		}
		json.Unmarshal(out, &run)
		envelope := ""
		for _, e := range run.Events {
			if e.Kind == events.KindExecutorAudit {
				var env struct{ Action string }
				json.Unmarshal([]byte(e.Attrs.Get("envelope")), &env)
				envelope = env.Action
			}
		}
		// replay --exit-code: 1 for a run that did not succeed.
		if err := exec.Command(tbBin, "--data", data, "replay", req.String(), "--exit-code").Run(); err == nil {
			t.Errorf("replay --exit-code of a %s run exited 0", code)
		}
		// `tail --request` prints the request's events and exits.
		if tail, err := exec.Command(tbBin, "--data", data, "tail", "--request", req.String()).Output(); err != nil || !strings.Contains(string(tail), "mcp.response.sent") {
			t.Errorf("tail --request %s: %v\n%s", req, err, tail)
		}
		resp, err := ui.Get(root + "/runs/" + req.String())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		// The client is told what a model can do; the operator's action is
		// in the evidence and the UI, not in the tool result.
		if hint := events.HintFor(code); hint == "" || sc.Error.Hint != hint || !strings.Contains(textOf(res), hint) || strings.Contains(textOf(res), want) {
			t.Errorf("%s %s: the tool result %q (hint %q): want the hint %q and not the operator's action", c.tool, code, textOf(res), sc.Error.Hint, hint)
		}
		for where, got := range map[string]string{"audit envelope": envelope, "verdict": run.Verdict.Action} {
			if got != want {
				t.Errorf("%s %s: %s says %q, want %q", c.tool, code, where, got, want)
			}
		}
		if !strings.Contains(html.UnescapeString(string(page)), "What to do: "+want) {
			t.Errorf("%s %s: the UI's run page does not say %q", c.tool, code, want)
		}
	}
	_, ok, _ := b.call(t, "regex_text_search", map[string]any{"pattern": "x", "text": "x"})
	if err := exec.Command(tbBin, "--data", data, "replay", ok.String(), "--exit-code").Run(); err != nil {
		t.Errorf("replay --exit-code of a run that succeeded: %v", err)
	}
	b.close(t)
}
