package main

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server without resources/templates/list (an optional method) still has
// its prompts and resources listed: each list stands on its own.
func TestOneMissingListHidesNothing(t *testing.T) {
	long(t)
	cfg := hostileConfig(t, "", map[string]string{
		"f": `env = { TB_FAULT_UPSTREAM = "1", TB_FAULT_RESOURCES = "f://notes", TB_FAULT_PROMPTS = "greet", TB_FAULT_REFUSE = "resources/templates/list" }`,
	})
	b := startBridge(t, tbBin, filepath.Join(t.TempDir(), "data"), "2025-06-18", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var prompts, resources []string
	for p, err := range b.session.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	for r, err := range b.session.Resources(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		resources = append(resources, r.URI)
	}
	if !slices.Contains(prompts, "f__greet") || !slices.Contains(resources, "f://notes") {
		t.Fatalf("prompts %q, resources %q: want f__greet and f://notes", prompts, resources)
	}
	res, err := b.session.GetPrompt(ctx, &sdk.GetPromptParams{Name: "f__greet"})
	if err != nil || len(res.Messages) != 1 {
		t.Fatalf("prompts/get: %v %+v", err, res)
	}
}
