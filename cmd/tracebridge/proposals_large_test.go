package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/host"
)

// Large proposals never lock the operator out: one over the documented
// limit is refused at creation (TooLarge); a dozen just under it (2 MB of
// edits, twice a pipe frame) still list, show and render on the approvals
// page, and can be decided.
func TestLargeProposalsKeepTheOperatorIn(t *testing.T) {
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	var file strings.Builder
	for i := range 12 {
		fmt.Fprintf(&file, "line %02d\n", i)
	}
	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(file.String()), 0o644)
	start(t, tbBin, data, "up", "--root", ws, "--ui", "127.0.0.1:0")
	url := uiURL(t, data)
	b := startBridge(t, tbBin, data, "2025-06-18")

	_, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "big.txt", "original": "line 00", "replacement": strings.Repeat("x", 300<<10)})
	if code != events.CodeTooLarge {
		t.Fatalf("a 300 KB proposal: %q, want TooLarge", code)
	}
	var ids []string
	for i := range 12 {
		res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "big.txt", "original": fmt.Sprintf("line %02d", i),
			"replacement": strings.Repeat(string(rune('a'+i)), host.MaxProposalBytes-64)})
		if code != "" {
			t.Fatalf("proposal %d: %s %s", i, code, textOf(res))
		}
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		ids = append(ids, p.ProposalID)
	}
	out, err := exec.Command(tbBin, "--data", data, "proposals", "list").CombinedOutput()
	if err != nil || strings.Count(string(out), "pending") != 12 {
		t.Fatalf("proposals list: %v\n%.2000s", err, out)
	}
	out, err = exec.Command(tbBin, "--data", data, "proposals", "show", ids[5]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "+ffff") {
		t.Fatalf("proposals show: %v\n%.500s", err, out)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, Transport: localhostTransport}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	resp, err = c.Get(strings.SplitN(url, "/?", 2)[0] + "/approvals")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(string(page), "TooLarge") {
		t.Fatalf("approvals page: %d\n%.1000s", resp.StatusCode, page)
	}
	for _, id := range ids {
		if !strings.Contains(string(page), `data-proposal="`+id+`"`) {
			t.Errorf("the approvals page lacks proposal %s", id)
		}
	}
	if out, err := exec.Command(tbBin, "--data", data, "proposals", "approve", ids[0]).CombinedOutput(); err != nil || !strings.Contains(string(out), "applied") {
		t.Fatalf("approve: %v %s", err, out)
	}
	b.close(t)
}

// The proposals CLI reads like a tool for people: newest first, filters,
// show prints the diff (plain when not a terminal), approve prints what it
// applied, reset asks first (non-interactive: --yes).
func TestProposalsCLI(t *testing.T) {
	base := t.TempDir()
	data, ws := filepath.Join(base, "data"), filepath.Join(base, "ws")
	os.MkdirAll(ws, 0o755)
	os.WriteFile(filepath.Join(ws, "a.txt"), []byte("one\ntwo\nthree\n"), 0o644)
	start(t, tbBin, data, "up", "--root", ws, "--ui", "off")
	eventually(t, 10*time.Second, "the host socket", func() bool {
		_, err := os.Stat(filepath.Join(data, "run", "host.sock"))
		return err == nil
	})
	b := startBridge(t, tbBin, data, "2025-06-18")
	var ids []string
	for _, repl := range []string{"ONE", "TWO"} {
		res, _, code := b.call(t, "propose_text_edit", map[string]any{"path": "a.txt", "original": strings.ToLower(repl), "replacement": repl})
		if code != "" {
			t.Fatalf("propose: %s", code)
		}
		var p struct{ ProposalID string }
		json.Unmarshal([]byte(textOf(res)), &p)
		ids = append(ids, p.ProposalID)
	}
	cli := func(args ...string) (string, error) {
		out, err := exec.Command(tbBin, append([]string{"--data", data, "proposals"}, args...)...).CombinedOutput()
		return string(out), err
	}
	out, _ := cli("list")
	if i, j := strings.Index(out, ids[1]), strings.Index(out, ids[0]); i < 0 || j < 0 || i > j {
		t.Fatalf("list is not newest first:\n%s", out)
	}
	if out, _ := cli("list", "--state", "applied"); !strings.Contains(out, "no proposals") {
		t.Fatalf("list --state applied:\n%s", out)
	}
	out, _ = cli("show", ids[0])
	if !strings.Contains(out, "-one\n") || !strings.Contains(out, "+ONE\n") || strings.Contains(out, "\x1b[") || strings.Contains(out, `\n`) {
		t.Fatalf("show is not a plain readable diff:\n%s", out)
	}
	if out, _ := cli("approve", ids[0]); !strings.Contains(out, "applied") || !strings.Contains(out, "+ONE") {
		t.Fatalf("approve does not show what it applied:\n%s", out)
	}
	if out, err := cli("reset"); err == nil || !strings.Contains(out, "--yes") {
		t.Fatalf("reset without --yes, not on a terminal: %v\n%s", err, out)
	}
	if out, _ := cli("list", "--state", "pending"); !strings.Contains(out, ids[1]) {
		t.Fatalf("the refused reset changed something:\n%s", out)
	}
	if out, err := cli("reset", "--yes"); err != nil || !strings.Contains(out, "reset") {
		t.Fatalf("reset --yes: %v\n%s", err, out)
	}
	b.close(t)
}
