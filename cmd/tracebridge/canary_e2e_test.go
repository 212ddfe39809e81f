package main

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"html/template"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// TestSecretCanaryAcrossProcesses: a secret only the bridge can resolve
// (its environment) never reaches the data dir, stderr or the UI in any
// form, from any process of the data dir:
//   - (a) the first call carries the value before any tool resolved it;
//   - (b) the host (a review, a proposal's preview, its state files), the
//     operator CLI (what the host answered it) and the UI (pages) never
//     resolved it themselves;
//   - (c) the value double-JSON-escaped.
func TestSecretCanaryAcrossProcesses(t *testing.T) {
	canary := fmt.Sprintf(`cnry"\%016x`, rand.Uint64())
	mixed := fmt.Sprintf("ZqCanaryMixedCase%016xEFGH", rand.Uint64()) // SEC1: recorded in no case
	t.Logf("canary %q, mixed %q", canary, mixed)
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("alpha\n"), 0o644)
	up := start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0") // no TB_CANARY: it cannot resolve the secret
	url := uiURL(t, data)
	b := startBridge(t, tbBin, data, "2025-06-18",
		writeConfig(t, "[approval]\nmode = \"allow\"\n[policy]\ngrant = [\"text.search\", \"workspace.read\", \"workspace.propose\", \"workspace.write\"]\n[secrets.API]\nenv = \"TB_CANARY\"\n[secrets.MIX]\nenv = \"TB_MIXED\"\n[tools.regex_text_search]\nsecrets = [\"API\"]\n"),
		"TB_CANARY="+canary, "TB_MIXED="+mixed)

	once, _ := json.Marshal(canary)
	twice, _ := json.Marshal(string(once))
	// (a) the first call carries it: no tool has resolved it yet.
	b.call(t, "bm25_text_search", map[string]any{"query": canary, "entries": []any{map[string]string{"id": "x", "text": "y"}}})
	// (c) double-JSON-escaped inside an argument.
	b.call(t, "bm25_text_search", map[string]any{"query": string(twice), "entries": []any{map[string]string{"id": "x", "text": "y"}}})
	// SEC1: bm25 lowercases what it matches; the client's mixed-case
	// secret and its case variants reach neither the answer nor the log.
	bm, _, _ := b.call(t, "bm25_text_search", map[string]any{"query": mixed + " " + strings.ToUpper(mixed), "entries": []any{
		map[string]string{"id": "x", "text": "the key is " + strings.ToLower(mixed)}}})
	if strings.Contains(strings.ToLower(textOf(bm)), strings.ToLower(mixed)) {
		t.Errorf("bm25 echoes the secret: %s", textOf(bm))
	}
	// (b) the host: a review, a proposal applied by the operator CLI.
	if _, _, code := b.call(t, "present_review", map[string]any{"content": "# Review\n\nkey " + canary + " and " + string(twice), "mode": "replace"}); code != "" {
		t.Fatalf("present_review: %s", code)
	}
	res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "a.txt", "original": "alpha", "replacement": "alpha " + canary})
	if code != "" {
		t.Fatalf("propose: %s %s", code, textOf(res))
	}
	var p struct{ ProposalID string }
	json.Unmarshal([]byte(textOf(res)), &p)
	cli := func(args ...string) string {
		out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("tracebridge %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	listed := cli("proposals", "list", "--json")
	cli("proposals", "approve", p.ProposalID)

	// The UI, signed in, shows the review and the runs.
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: localhostTransport}
	page := func(path string) string {
		resp, err := c.Get(path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return string(body)
	}
	root := strings.SplitN(url, "/?", 2)[0]
	page(url)
	ui := page(root+"/reviews") + page(root+"/runs") + page(root+"/approvals")
	b.close(t)

	haystacks := map[string]string{"bridge stderr": b.stderr.String(), "up stderr": up.stderrText(), "UI pages": ui, "proposals list": listed}
	filepath.Walk(data, func(path string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			body, _ := os.ReadFile(path)
			haystacks[path] = string(body)
		}
		return nil
	})
	needles := []string{canary, string(once[1 : len(once)-1]), string(twice[1 : len(twice)-1]),
		hex.EncodeToString([]byte(canary)), base64.StdEncoding.EncodeToString([]byte(canary))[:12],
		html.EscapeString(canary), template.HTMLEscapeString(canary),
		mixed, strings.ToLower(mixed), strings.ToUpper(mixed)}
	for where, hay := range haystacks {
		for _, n := range needles {
			if strings.Contains(hay, n) {
				t.Errorf("canary form %q found in %s", n, where)
			}
		}
	}
	if !strings.Contains(haystacks[filepath.Join(data, "events.db")], "[REDACTED:secret:") {
		t.Error("no redaction marker in the store: nothing was recorded")
	}
	if !strings.Contains(ui, "[REDACTED:secret:") {
		t.Error("the UI's review page shows no redaction marker: the review did not arrive")
	}

	// Equal secrets, equal fingerprints, whichever process redacted them:
	// the bridge (mcp.response.sent) and the host (review.presented).
	out, err := exec.Command(tbBin, "--data", data, "runs", "--json", "--limit", "1000").Output()
	if err != nil {
		t.Fatalf("runs: %v", err)
	}
	marks := regexp.MustCompile(`\[REDACTED:secret:([0-9a-f]{8})\]`)
	byKind := map[string]map[string]bool{}
	all := map[string]bool{}
	var evs []events.Event
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct{ RequestID events.ID }
		json.Unmarshal([]byte(line), &r)
		rep, err := exec.Command(tbBin, "--data", data, "replay", r.RequestID.String(), "--format", "json").Output()
		if err != nil {
			t.Fatalf("replay %s: %v", r.RequestID, err)
		}
		var run struct{ Events []events.Event }
		json.Unmarshal(rep, &run)
		evs = append(evs, run.Events...)
	}
	for _, e := range evs {
		line, _ := json.Marshal(e)
		for _, m := range marks.FindAllStringSubmatch(string(line), -1) {
			if byKind[e.Kind] == nil {
				byKind[e.Kind] = map[string]bool{}
			}
			byKind[e.Kind][m[1]] = true
			all[m[1]] = true
		}
	}
	// Two secrets (the canary, the mixed-case one): two fingerprints, and
	// the host (which saw only the canary) used the bridge's for it.
	host := byKind["review.presented"]
	if len(all) != 2 || len(host) != 1 || len(byKind["mcp.response.sent"]) == 0 {
		t.Errorf("one secret should have one fingerprint in the bridge's and the host's events: %v", byKind)
	}
	for fp := range host {
		if !byKind["mcp.response.sent"][fp] {
			t.Errorf("the host's fingerprint %s of the canary is not the bridge's: %v", fp, byKind)
		}
	}
}
