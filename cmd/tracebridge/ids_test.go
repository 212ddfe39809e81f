package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Ids are taken whole or as a unique prefix (at least 4 characters), in
// either case; an ambiguous or unknown prefix says so.
func TestIDPrefixes(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	b := startBridge(t, tbBin, data, "2025-06-18")
	_, req, _ := b.call(t, "regex_text_search", map[string]any{"query": "x", "text": "x"})
	b.call(t, "regex_text_search", map[string]any{"query": "y", "text": "y"})
	b.close(t)
	run := func(args ...string) (string, error) {
		out, err := exec.Command(tbBin, append([]string{"--data", data}, args...)...).CombinedOutput()
		return string(out), err
	}
	id := req.String()
	if out, err := run("replay", strings.ToLower(id[:14])); err != nil || !strings.Contains(out, id) {
		t.Fatalf("replay by a lowercase prefix: %v\n%s", err, out)
	}
	if out, err := run("tail", "--request", id[:16]); err != nil || !strings.Contains(out, "mcp.response.sent") {
		t.Fatalf("tail --request by a prefix: %v\n%s", err, out)
	}
	// Requests of one session within a few ms share their first characters.
	if out, err := run("replay", id[:5]); err == nil || !strings.Contains(out, "ambiguous") {
		t.Fatalf("an ambiguous prefix: %v\n%s", err, out)
	}
	if out, err := run("replay", "ZZZZZZ"); err == nil || !strings.Contains(out, "no request id starts with ZZZZZZ") {
		t.Fatalf("an unknown prefix: %v\n%s", err, out)
	}
	if out, err := run("replay", "abc"); err == nil || !strings.Contains(out, "is not a request id") {
		t.Fatalf("too short: %v\n%s", err, out)
	}
	out, _ := run("runs", "--json", "-n", "1")
	var r struct {
		SessionID string `json:"sessionId"`
	}
	json.Unmarshal([]byte(strings.SplitN(out, "\n", 2)[0]), &r)
	if out, err := run("session", "export", strings.ToLower(r.SessionID[:12]), "-o", "-"); err != nil || !strings.Contains(out, r.SessionID) {
		t.Fatalf("session export by a prefix: %v\n%.300s", err, out)
	}
}
