package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A session in which an upstream asked the client for a sampling during a
// call re-drives offline: the recorded upstream asks again, the bridge
// relays it, the re-drive's client answers as the client did, and the
// relayed answer must be the recorded one. A re-drive whose client does
// not offer sampling drifts: the upstream's request never reaches it.
func TestRelayedSamplingRedrives(t *testing.T) {
	long(t)
	data := filepath.Join(t.TempDir(), "data")
	cfg := hostileConfig(t, "", map[string]string{"f": `env = { TB_FAULT_UPSTREAM = "1" }`})
	copts := &sdk.ClientOptions{
		//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			//lint:ignore SA1019 sampling is deprecated in 2026-07-28 but in its window; the gateway relays it
			return &sdk.CreateMessageResult{Model: "m", Role: "assistant", Content: &sdk.TextContent{Text: "from the sampling client"}}, nil
		},
	}
	b := startBridgeWith(t, tbBin, data, "2025-11-25", copts, cfg)
	eventually(t, 30*time.Second, "the upstream's tools are listed", func() bool { return slices.Contains(toolNames(t, b.session), "f__sample") })
	res, _, code := b.call(t, "f__sample", map[string]any{"text": "x"})
	if code != "" || !strings.Contains(textOf(res), "from the sampling client") {
		t.Fatalf("sampling through the gateway: %s %q", code, textOf(res))
	}
	b.close(t)

	dir := t.TempDir()
	file := filepath.Join(dir, "sampling.jsonl")
	(&recording{data: data}).exportLast(t, "f__sample", file, "sampling")
	b2, _ := os.ReadFile(file)
	if !strings.Contains(string(b2), `"asks":[{"method":"sampling/createMessage"`) {
		t.Fatalf("the session file lacks the relayed sampling:\n%s", b2)
	}
	replay := func(f string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, tbBin, "session", "replay", f)
		cmd.Env = append(os.Environ(), "PATH=") // nothing runs: the upstream is the recording
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := replay(file); err != nil || !strings.Contains(out, "no drift") {
		t.Fatalf("a session with a relayed sampling does not re-drive cleanly: %v\n%s\nfile:\n%s", err, out, b2)
	}
	// The same session from a client that offers no sampling.
	mutated := strings.Replace(string(b2), `"sampling":{}`, `"experimental":{}`, 1)
	if mutated == string(b2) {
		t.Fatalf("the recorded initialize does not declare sampling:\n%s", b2)
	}
	f2 := filepath.Join(dir, "no-sampling.jsonl")
	os.WriteFile(f2, []byte(mutated), 0o600)
	if out, err := replay(f2); err == nil || !strings.Contains(out, "expected upstream.client.asked Upstream→Client ok") ||
		!strings.Contains(out, "asked the client for sampling/createMessage: the answer differs") {
		t.Fatalf("a client without sampling re-drives without drift: %v\n%s", err, out)
	}
}
