package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/tracebridge/tracebridge/events"
	"github.com/tracebridge/tracebridge/store"
)

// auditSchema is docs/audit-export.schema.json, resolved.
func auditSchema(t *testing.T) *jsonschema.Resolved {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "audit-export.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	var schema jsonschema.Schema
	if err := json.Unmarshal(raw, &schema); err != nil {
		t.Fatal(err)
	}
	resolved, err := schema.Resolve(nil)
	if err != nil {
		t.Fatalf("the schema does not resolve: %v", err)
	}
	return resolved
}

// export audit writes one line per audit envelope, each valid against the
// documented schema, in seq order, covered by a signed checkpoint, with no
// secret; --since resumes; --follow streams new ones.
func TestExportAudit(t *testing.T) {
	resolved := auditSchema(t)
	data := filepath.Join(t.TempDir(), "data")
	const canary = "siem-canary-0123456789abcdef"
	cfg := writeConfig(t, "[secrets.K]\nenv = \"TB_SIEM_KEY\"\n[tools.regex_text_search]\nsecrets = [\"K\"]\n[policy]\ndeny = [\"bm25_text_search\"]\n")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg, "TB_SIEM_KEY="+canary)
	b.call(t, "regex_text_search", map[string]any{"query": canary, "text": "x"})
	b.call(t, "bm25_text_search", map[string]any{"query": "x", "entries": []map[string]string{{"id": "a", "text": "x"}}})
	b.close(t)

	export := func(args ...string) []map[string]any {
		t.Helper()
		out, err := exec.Command(tbBin, append([]string{"--data", data, "export", "audit"}, args...)...).Output()
		if err != nil {
			t.Fatalf("export audit %v: %v", args, err)
		}
		if strings.Contains(string(out), canary) {
			t.Fatal("the export holds the secret")
		}
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if l == "" {
				continue
			}
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, l)
			}
			if err := resolved.Validate(v); err != nil {
				t.Fatalf("a line does not fit docs/audit-export.schema.json: %v\n%s", err, l)
			}
			lines = append(lines, v)
		}
		return lines
	}
	lines := export()
	if len(lines) != 2 {
		t.Fatalf("%d lines, want one per call", len(lines))
	}
	var codes []string
	last := 0.0
	for _, l := range lines {
		seq := l["seq"].(float64)
		cp := l["checkpoint"].(map[string]any)
		if seq <= last || cp["seq"].(float64) < seq {
			t.Fatalf("seq %v after %v, checkpoint %v", seq, last, cp["seq"])
		}
		last = seq
		var signed store.Checkpoint
		b, _ := json.Marshal(cp)
		if err := json.Unmarshal(b, &signed); err != nil || signed.CheckSignature(nil) != nil {
			t.Fatalf("the covering checkpoint does not verify: %v %v", err, signed.CheckSignature(nil))
		}
		if c, ok := l["code"].(string); ok {
			codes = append(codes, c)
		}
	}
	if strings.Join(codes, ",") != string(events.CodePolicyDenied) {
		t.Fatalf("codes %v", codes)
	}
	if more := export("--since", fmt.Sprint(int64(lines[1]["seq"].(float64)))); len(more) != 0 {
		t.Fatalf("--since the last seq: %d lines", len(more))
	}

	// --follow: a new call's envelope arrives without restarting the export.
	outFile := filepath.Join(t.TempDir(), "audit.jsonl")
	follow := exec.Command(tbBin, "--data", data, "export", "audit", "--follow", "-o", outFile)
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { follow.Process.Kill(); follow.Wait() })
	b = startBridge(t, tbBin, data, "2025-06-18", cfg, "TB_SIEM_KEY="+canary)
	b.call(t, "regex_text_search", map[string]any{"query": "later", "text": "later"})
	b.close(t)
	eventually(t, 10*time.Second, "the followed export has three lines", func() bool {
		f, err := os.Open(outFile)
		if err != nil {
			return false
		}
		defer f.Close()
		n := 0
		for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		}
		return n == 3
	})
}

// An audit envelope over 4 KiB (an upstream tool with a long description)
// is exported whole, as JSON, from the payload store: not cut, and not the
// reference the event holds.
func TestExportAuditLongEnvelope(t *testing.T) {
	long(t)
	dir := t.TempDir()
	desc := filepath.Join(dir, "desc.txt")
	os.WriteFile(desc, []byte("Answers ok. "+strings.Repeat("A long, honest description. ", 250)+"END-OF-DESCRIPTION\n"), 0o600)
	cfg := hostileConfig(t, "", map[string]string{"up": fmt.Sprintf("env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_DESC = %q }", desc)})
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg)
	if _, _, code := b.call(t, "up__ok", map[string]any{}); code != "" {
		t.Fatal(code)
	}
	b.close(t)
	out, err := exec.Command(tbBin, "--data", data, "export", "audit").Output()
	if err != nil {
		t.Fatalf("export audit: %v", err)
	}
	var line struct {
		Kind        string          `json:"kind"`
		Envelope    json.RawMessage `json:"envelope"`
		EnvelopeCut string          `json:"envelopeCut"`
	}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") { // the tool's pin comes first
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		if line.Kind == events.KindExecutorAudit {
			break
		}
	}
	if line.EnvelopeCut != "" || len(line.Envelope) < 4096 || !strings.Contains(string(line.Envelope), "END-OF-DESCRIPTION") {
		t.Fatalf("the long envelope was exported as %d bytes of JSON, cut %.120q", len(line.Envelope), line.EnvelopeCut)
	}
}

// The audit trail holds the security events too: the HTTP front door's
// refusals are lines of the native export (valid against its schema) and
// Elastic Common Schema documents with --format ecs, categorized and
// carrying who asked for what (the export package checks every kind
// against the published ECS definition).
func TestExportAuditSecurityEventsAsECS(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	url, _, _, bridge := startHTTPBridge(t, data)
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{}`))
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	eventually(t, 5*time.Second, "both refusals are recorded", func() bool {
		return countCode(t, data, events.KindMCPHTTPRejected, events.CodeUnauthenticated) > 0 && countCode(t, data, events.KindMCPHTTPRejected, events.CodeForeignOrigin) > 0
	})
	bridge.Process.Signal(os.Interrupt)
	bridge.Wait()

	export := func(args ...string) []map[string]any {
		t.Helper()
		cmd := exec.Command(tbBin, append([]string{"--data", data, "export", "audit"}, args...)...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("export audit %v: %v\n%s", args, err, stderr.String())
		}
		var lines []map[string]any
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var v map[string]any
			if err := json.Unmarshal([]byte(l), &v); err != nil {
				t.Fatalf("not JSON: %v\n%s", err, l)
			}
			lines = append(lines, v)
		}
		return lines
	}
	schema := auditSchema(t)
	native := export()
	for _, l := range native {
		if err := schema.Validate(l); err != nil {
			t.Fatalf("a line does not fit docs/audit-export.schema.json: %v\n%v", err, l)
		}
	}
	ecs := export("--format", "ecs")
	if len(ecs) != len(native) {
		t.Fatalf("%d ECS documents for %d lines", len(ecs), len(native))
	}
	refused := map[string]map[string]any{}
	for _, d := range ecs {
		ev := d["event"].(map[string]any)
		if d["ecs"].(map[string]any)["version"] != "9.4.0" || d["@timestamp"] == nil {
			t.Fatalf("not an ECS 9.4 document: %v", d)
		}
		if ev["action"] == events.KindMCPHTTPRejected {
			refused[ev["code"].(string)] = d
		}
	}
	for _, code := range []events.Code{events.CodeUnauthenticated, events.CodeForeignOrigin} {
		d := refused[string(code)]
		if d == nil {
			t.Fatalf("no ECS document for the %s refusal among %d", code, len(ecs))
		}
		ev := d["event"].(map[string]any)
		category := map[events.Code]string{events.CodeUnauthenticated: "[authentication web]", events.CodeForeignOrigin: "[web intrusion_detection]"}[code]
		if fmt.Sprint(ev["category"]) != category || ev["outcome"] != "failure" ||
			d["url"].(map[string]any)["path"] != "/mcp" || d["source"].(map[string]any)["address"] == nil {
			t.Fatalf("the %s refusal as ECS: %v", code, d)
		}
	}
	if o := refused[string(events.CodeForeignOrigin)]["labels"].(map[string]any)["origin"]; o != "https://evil.example" {
		t.Fatalf("the refused Origin: %v", o)
	}
	if out, err := exec.Command(tbBin, "--data", data, "export", "audit", "--format", "cef").CombinedOutput(); err == nil || !strings.Contains(string(out), "want jsonl or ecs") {
		t.Fatalf("--format cef: %v\n%s", err, out)
	}
}
