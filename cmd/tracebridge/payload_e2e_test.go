package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tracebridge/tracebridge/events"
)

// Upstream answers of 1 KiB, 64 KiB, 1 MiB and 8 MiB pass whole through
// the real bridge (the secret in them redacted for the client too), are kept whole in the log (redacted: a secret inside
// them is nowhere in the data dir), verify, export into a session file that
// holds them whole with the configuration the session ran with (not
// today's), and re-drive offline with no drift.
func TestLargeAnswersAreRecordedWholeAndRedriven(t *testing.T) {
	long(t)
	dir := t.TempDir()
	canary := "zqLargePayloadCanary" + fmt.Sprint(os.Getpid()) + "XYZW"
	cfg := hostileConfig(t, "[secrets.CANARY]\nenv = \"TB_TEST_CANARY\"\n",
		map[string]string{"up": "env = { TB_FAULT_UPSTREAM = \"1\", TB_FAULT_CANARY = \"${secret:CANARY}\" }"})
	data := filepath.Join(dir, "data")
	b := startBridge(t, tbBin, data, "2025-06-18", cfg, "TB_TEST_CANARY="+canary)
	sizes := []int{1 << 10, 64 << 10, 1 << 20, 8 << 20}
	var reqs []events.ID
	for _, n := range sizes {
		res, req, code := b.call(t, "up__sized", map[string]any{"text": fmt.Sprint(n)})
		if code != "" {
			t.Fatalf("%d bytes: %s %.200s", n, code, textOf(res))
		}
		// Whole, but for the configured secret: the guard redacts it from
		// what the client reads too (result-secret).
		if text := textOf(res); strings.Contains(text, canary) || !strings.Contains(text, "[REDACTED:secret:") || len(text) < n-len(canary) {
			t.Fatalf("the client got %d of %d bytes, canary redacted: %v", len(text), n, !strings.Contains(text, canary))
		}
		reqs = append(reqs, req)
	}
	b.close(t)
	var sid events.ID
	for i, n := range sizes {
		evs := requestEvents(t, data, reqs[i])
		sid = evs[0].SessionID
		for _, e := range evs {
			if e.Kind != events.KindUpstreamResponse {
				continue
			}
			if a := e.Attrs.Get("answer"); n > events.MaxAttrLen && len(e.Refs()) == 0 {
				t.Fatalf("the %d-byte answer is recorded as %.100q, not a payload reference", n, a)
			}
		}
	}

	out, err := exec.Command(tbBin, "--data", data, "verify").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ok:") {
		t.Fatalf("verify: %v\n%s", err, out)
	}
	// Today's configuration is another one: the export takes the one the
	// bridge recorded when the session started.
	cfgFile := strings.TrimPrefix(cfg, "TRACEBRIDGE_CONFIG=")
	os.WriteFile(cfgFile, []byte("# today's configuration: no servers\n"), 0o600)
	file := filepath.Join(dir, "large.jsonl")
	export := exec.Command(tbBin, "--data", data, "session", "export", sid.String(), "-o", file)
	export.Env = append(os.Environ(), cfg)
	if out, err := export.CombinedOutput(); err != nil {
		tl, _ := exec.Command(tbBin, "--data", data, "tail", "-n", "100", "--json").CombinedOutput()
		t.Fatalf("export: %v\n%s\n%s", err, out, tl)
	}
	recording, _ := os.ReadFile(file)
	if !bytes.Contains(recording, []byte("TB_FAULT_CANARY")) || bytes.Contains(recording, []byte("today's configuration")) {
		t.Fatal("the session file does not hold the configuration the session ran with")
	}
	if len(recording) < 8<<20 || bytes.Contains(recording, []byte("PAYLOAD:sha256")) || bytes.Contains(recording, []byte("TRUNCATED")) {
		t.Fatalf("the session file (%d bytes) does not hold the answers whole", len(recording))
	}
	if hits := append(canaryHits(t, data, canary), canaryHits(t, dir, canary)...); len(hits) > 0 {
		t.Fatalf("the canary inside the large answers is in %v", hits)
	}
	cmd := exec.Command(tbBin, "session", "replay", file)
	cmd.Env = append(os.Environ(), "PATH=") // offline: nothing to start
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "no drift") {
		t.Fatalf("re-drive of the recorded large answers: %v\n%.2000s", err, out)
	}
}
